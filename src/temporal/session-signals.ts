import { WorkflowNotFoundError } from '@temporalio/client';
import type { Deps } from '../deps';
import { SEARCH_ATTRIBUTES, SIGNAL_EVENTS_APPENDED, SIGNAL_INTERRUPT, SIGNAL_TITLE_CHANGED, sessionWorkflowId } from './names';

export interface SessionRef {
  id: string;
  project_id: string;
  agent_id: string;
  title?: string | null;
}

export interface SessionWorkflowInput {
  sessionId: string;
}

/**
 * Wakes the session's workflow, starting it if it was never started or has finished
 * (signalWithStart). Called after the events transaction commits. If this throws, the
 * events stay unprocessed and the worker's reconciler signals again later.
 */
/**
 * Tells a running session workflow its session's new title (for the memo). A workflow that
 * is not running needs nothing: the next signalWithStart starts it with the current title.
 */
export async function signalTitleChanged(deps: Deps, sessionId: string, title: string | null): Promise<void> {
  const client = await deps.temporal.get();
  try {
    await client.workflow.getHandle(sessionWorkflowId(sessionId)).signal(SIGNAL_TITLE_CHANGED, title ?? '');
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

export async function signalSession(deps: Deps, session: SessionRef, kind: 'events' | 'interrupt' = 'events', runId?: string): Promise<void> {
  const client = await deps.temporal.get();
  await client.workflow.signalWithStart('sessionWorkflow', {
    workflowId: sessionWorkflowId(session.id),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [{ sessionId: session.id } satisfies SessionWorkflowInput],
    signal: kind === 'interrupt' ? SIGNAL_INTERRUPT : SIGNAL_EVENTS_APPENDED,
    signalArgs: [kind === 'interrupt' ? (runId ?? null) : null] as [string | null],
    searchAttributes: {
      [SEARCH_ATTRIBUTES.projectId]: [session.project_id],
      [SEARCH_ATTRIBUTES.agentId]: [session.agent_id],
    },
    memo: { title: session.title ?? '' },
    staticSummary: `Session ${session.id}${session.title ? `: ${session.title}` : ''}`,
  });
}
