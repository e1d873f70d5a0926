import type { Deps } from '../deps';
import type { Queryable } from '../store/db';
import { signalSession, type SessionRef } from './session-signals';

/**
 * Re-signals sessions whose run-starting events were committed but never processed
 * (the api crashed, or Temporal was unreachable, between commit and signal). Signals are
 * idempotent for the workflow (it re-reads the log), so an accepted message is never
 * lost and never runs twice.
 */
export async function reconcileOnce(deps: Deps, olderThanMs = 2000): Promise<number> {
  const rows = await sessionsToReconcile(deps.db, olderThanMs);
  for (const session of rows) {
    await signalSession(deps, session).catch((error) => deps.logger.warn({ err: error, session_id: session.id }, 'reconcile signal failed'));
  }
  return rows.length;
}

/** Sessions with events older than `olderThanMs` that should have started or resumed a run and did not. */
export async function sessionsToReconcile(db: Queryable, olderThanMs: number): Promise<SessionRef[]> {
  const { rows } = await db.query<SessionRef>(
    `SELECT s.id, s.project_id, s.agent_id, s.title
       FROM session_events e JOIN sessions s ON s.id = e.session_id
      WHERE e.processed_at IS NULL AND e.type IN ('user.message', 'user.tool_result')
        AND e.created_at < now() - ($1 || ' milliseconds')::interval
        AND s.deleted_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM sites WHERE sites.client_id = s.client_id AND sites.async_execution_enabled = false)
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

export function startReconciler(deps: Deps): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    reconcileOnce(deps)
      .then((count) => count > 0 && deps.logger.info({ sessions: count }, 'reconciler re-signalled sessions'))
      .catch((error) => deps.logger.warn({ err: error }, 'reconciler pass failed'))
      .finally(() => (running = false));
  }, deps.config.RECONCILE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
