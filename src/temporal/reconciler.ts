import { accountOfProject, siteOfClient } from '../store/sites';
import type { Deps } from '../deps';
import type { Queryable } from '../store/db';
import { markWorkflowEnded } from '../store/sessions';
import { signalSession, signalSessionDeleted, type SessionRef } from './session-signals';

/**
 * Re-signals sessions whose events were committed but whose signal never arrived (the api
 * crashed, or Temporal was unreachable, between commit and signal): run-starting events, and
 * interrupts of a run that still holds the session. Both signals are idempotent for the
 * workflow (it re-reads the log; a run is cancelled once), so an accepted message is never
 * lost and never runs twice, and an accepted interrupt still ends its run. Returns how many
 * were signalled. A signal that fails because Temporal is unreachable ends the pass: each
 * further signal would only wait out its deadline (the next pass tries again).
 */
export async function reconcileOnce(deps: Deps, olderThanMs = 2000): Promise<number> {
  const signals: Array<{ session: SessionRef; runId?: string }> = [
    ...(await sessionsToReconcile(deps.db, olderThanMs)).map((session) => ({ session })),
    ...(await interruptsToReconcile(deps.db, olderThanMs)),
  ];
  let signalled = 0;
  for (const { session, runId } of signals) {
    try {
      await signalSession(deps, session, runId ? 'interrupt' : 'events', runId);
      signalled++;
    } catch (error) {
      if (reconcileFailed(deps, session.id, error)) break;
    }
  }
  return signalled;
}

// gRPC DEADLINE_EXCEEDED and UNAVAILABLE.
const UNREACHABLE_GRPC_CODES = new Set([4, 14]);

/**
 * Whether a Temporal call failed because Temporal cannot be reached: no connection could be
 * made, or the gRPC call ran out of time or found no server. The client wraps the gRPC error
 * (`ServiceError: Failed to signalWithStart Workflow`, the code on its cause): causes are read.
 */
export function temporalUnreachable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const { code, name, message } = cause as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'number' && UNREACHABLE_GRPC_CODES.has(code)) return true;
    if (name === 'TransportError' || (typeof message === 'string' && /Failed to connect before the deadline/.test(message))) return true;
  }
  return false;
}

/**
 * Interrupts older than `olderThanMs` whose run still holds the session: the signal may have
 * been lost. (A run an interrupt ended no longer holds the session, so it is not found again.)
 */
export async function interruptsToReconcile(db: Queryable, olderThanMs: number): Promise<Array<{ session: SessionRef; runId: string }>> {
  const { rows } = await db.query<SessionRef & { run_id: string }>(
    `SELECT s.id, s.project_id, s.agent_id, s.title, s.active_run_id AS run_id
       FROM session_events e JOIN sessions s ON s.id = e.session_id
      WHERE e.processed_at IS NULL AND e.type = 'user.interrupt' AND e.run_id = s.active_run_id
        AND e.created_at < now() - ($1 || ' milliseconds')::interval
        AND s.deleted_at IS NULL
      GROUP BY s.id
      ORDER BY min(e.created_at)
      LIMIT 500`,
    [String(olderThanMs)],
  );
  return rows.map(({ run_id, ...session }) => ({ session, runId: run_id }));
}

/** Sessions with events older than `olderThanMs` that should have started or resumed a run and did not. */
export async function sessionsToReconcile(db: Queryable, olderThanMs: number): Promise<SessionRef[]> {
  const { rows } = await db.query<SessionRef>(
    `SELECT s.id, s.project_id, s.agent_id, s.title
       FROM session_events e JOIN sessions s ON s.id = e.session_id
      WHERE e.processed_at IS NULL AND e.type IN ('user.message', 'user.tool_result')
        AND e.created_at < now() - ($1 || ' milliseconds')::interval
        AND s.deleted_at IS NULL
        AND ${siteOfClient('async_execution_enabled', 's.client_id', accountOfProject('s.project_id'))} IS DISTINCT FROM false
        -- a pause still waiting for some of its results has nothing to run yet
        AND s.pending_tool_use_ids = '[]'::jsonb
        -- a tool result resumes only a run that holds the session; one that came after its
        -- run ended (interrupted or abandoned while paused) waits for the next message's run
        AND (e.type = 'user.message' OR s.active_run_id IS NOT NULL)
      GROUP BY s.id
      ORDER BY min(e.created_at)  -- oldest first, so a backlog is worked through in order
      LIMIT 500`,
    [String(olderThanMs)],
  );
  return rows;
}

/** How long after its delete a session's workflow is expected to have ended; also the pause between re-signals. */
export const DELETED_SESSION_GRACE_MS = 60_000;

/**
 * Deleted sessions deleted more than `olderThanMs` ago whose workflow has not ended: the
 * delete's signal was lost (Temporal unreachable), or the session was deleted before
 * workflows ended on deletion. Each is signalled again; one with no workflow running is
 * recorded as ended. Returns how many were signalled.
 */
export async function reconcileDeletedSessions(deps: Deps, olderThanMs = DELETED_SESSION_GRACE_MS): Promise<number> {
  const { rows } = await deps.db.query<SessionRef & { active_run_id: string | null }>(
    `SELECT id, project_id, agent_id, title, active_run_id FROM sessions
      WHERE deleted_at IS NOT NULL AND workflow_ended_at IS NULL AND deleted_at < now() - ($1 || ' milliseconds')::interval
      ORDER BY deleted_at LIMIT 500`,
    [String(olderThanMs)],
  );
  let signalled = 0;
  for (const { active_run_id: runId, ...session } of rows) {
    const id = session.id;
    // A run still holding the session is interrupted first (the delete's own interrupt was lost);
    // its end then finds the session deleted, and the workflow ends.
    const signal = runId ? signalSession(deps, session, 'interrupt', runId).then(() => 'signalled' as const) : signalSessionDeleted(deps, id);
    const outcome = await signal.catch((error: unknown) => (reconcileFailed(deps, id, error) ? ('unreachable' as const) : ('failed' as const)));
    if (outcome === 'unreachable') break;
    if (outcome === 'signalled') signalled++;
    if (outcome === 'no_workflow') await markWorkflowEnded(deps.db, id);
  }
  return signalled;
}

/** Logs a failed re-signal; true when Temporal is unreachable (the pass then stops: the rest wait for the next). */
function reconcileFailed(deps: Deps, sessionId: string, error: unknown): boolean {
  const unreachable = temporalUnreachable(error);
  deps.logger.warn({ err: error, session_id: sessionId }, unreachable ? 'reconcile signal failed: Temporal unreachable, the rest wait for the next pass' : 'reconcile signal failed');
  return unreachable;
}

export function startReconciler(deps: Deps): () => void {
  let running = false;
  // Deleted sessions are looked at once per grace period, so a workflow that cannot end yet
  // (its worker is down) is not sent a signal every pass.
  let deletedCheckedAt = 0;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    const checkDeleted = Date.now() - deletedCheckedAt >= DELETED_SESSION_GRACE_MS;
    if (checkDeleted) deletedCheckedAt = Date.now();
    Promise.all([reconcileOnce(deps), checkDeleted ? reconcileDeletedSessions(deps) : 0])
      .then(([count, deleted]) => {
        if (count > 0) deps.logger.info({ sessions: count }, 'reconciler re-signalled sessions');
        if (deleted > 0) deps.logger.info({ sessions: deleted }, 'reconciler re-signalled deleted sessions whose workflow still runs');
      })
      .catch((error) => deps.logger.warn({ err: error }, 'reconciler pass failed'))
      .finally(() => (running = false));
  }, deps.config.RECONCILE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
