import { WorkflowNotFoundError, type Connection } from '@temporalio/client';
import type { Deps } from '../deps';
import type { RunCycle } from '../../activities/run-cycle';
import { SEARCH_ATTRIBUTES, SIGNAL_EVENTS_APPENDED, SIGNAL_INTERRUPT, SIGNAL_TITLE_CHANGED, sessionWorkflowId } from './names';

export interface SessionRef {
  id: string;
  project_id: string;
  agent_id: string;
  title?: string | null;
}

export interface SessionWorkflowInput {
  sessionId: string;
  /**
   * Set by a workflow that continued as new at a run's end: the next run, which its close had
   * already claimed, for the new execution to run first.
   */
  claimed?: Extract<RunCycle, { runId: string }>;
}

const TITLE_SIGNAL_DEADLINE_MS = 2000;
/**
 * How long a wake-up signal may take. Its callers answer a client after a commit (the events
 * route) or sweep many sessions (the reconciler): during a Temporal outage the client's
 * built-in retries would hold them for tens of seconds, or forever across a partition. A
 * signal that misses it is sent again by the reconciler (the events stay unprocessed).
 */
export const SIGNAL_DEADLINE_MS = 3000;

/** Runs a Temporal call with a deadline (which also ends the client's built-in retries). */
const withDeadline = <T>(client: { connection: unknown }, deadlineMs: number, call: () => Promise<T>): Promise<T> =>
  (client.connection as Connection).withDeadline(Date.now() + deadlineMs, call);

/**
 * Tells the session's workflow its new title (for the memo), starting it if needed: a rename
 * racing the session's first message must not leave the memo with the title that message's
 * request read before the rename committed (signals are applied in order, each carrying the
 * title of its time).
 */
export async function signalTitleChanged(deps: Deps, session: SessionRef): Promise<void> {
  const client = await deps.temporal.get();
  // The caller holds the session's row lock: a Temporal outage must not hold it for the
  // client's built-in retries (the memo then waits for the next rename).
  await withDeadline(client, TITLE_SIGNAL_DEADLINE_MS, () =>
    client.workflow.signalWithStart('sessionWorkflow', { ...startOptions(deps, session), signal: SIGNAL_TITLE_CHANGED, signalArgs: [session.title ?? ''] as [string] }),
  );
}

/**
 * Wakes the session's workflow, starting it if it was never started or has finished
 * (signalWithStart). Called after the events transaction commits. If this throws, the
 * events stay unprocessed and the worker's reconciler signals again later.
 */
export async function signalSession(deps: Deps, session: SessionRef, kind: 'events' | 'interrupt' = 'events', runId?: string): Promise<void> {
  const client = await deps.temporal.get();
  await withDeadline(client, SIGNAL_DEADLINE_MS, () =>
    client.workflow.signalWithStart('sessionWorkflow', {
      ...startOptions(deps, session),
      signal: kind === 'interrupt' ? SIGNAL_INTERRUPT : SIGNAL_EVENTS_APPENDED,
      signalArgs: [kind === 'interrupt' ? (runId ?? null) : null] as [string | null],
    }),
  );
}

/**
 * Wakes a deleted session's workflow so it ends (its claim finds the session deleted). One
 * that is not running needs nothing: nothing starts it again.
 */
export async function signalSessionDeleted(deps: Deps, sessionId: string): Promise<'signalled' | 'no_workflow'> {
  const client = await deps.temporal.get();
  try {
    await withDeadline(client, SIGNAL_DEADLINE_MS, () => client.workflow.getHandle(sessionWorkflowId(sessionId)).signal(SIGNAL_EVENTS_APPENDED, null));
    return 'signalled';
  } catch (error) {
    // Never started, or already closed: nothing is left running for the session.
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    return 'no_workflow';
  }
}

/** How a session's workflow is started (by whichever signal comes first). */
function startOptions(deps: Deps, session: SessionRef) {
  return {
    workflowId: sessionWorkflowId(session.id),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [{ sessionId: session.id } satisfies SessionWorkflowInput] as [SessionWorkflowInput],
    searchAttributes: {
      [SEARCH_ATTRIBUTES.projectId]: [session.project_id],
      [SEARCH_ATTRIBUTES.agentId]: [session.agent_id],
      // Idle until a run starts: an execution a reset made (which starts with these) is found
      // by a SessionStatus search before its first run too.
      [SEARCH_ATTRIBUTES.sessionStatus]: ['idle'],
    },
    memo: { title: session.title ?? '' },
    staticSummary: `Session ${session.id}${session.title ? `: ${session.title}` : ''}`,
  };
}
