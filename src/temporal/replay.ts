import { Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { sessionWorkflowId } from './names';
import { WORKFLOWS_PATH } from './worker';

/**
 * Replays a session's recorded workflow history against the current workflow code.
 * Resolves when the code makes the same decisions; rejects (DeterminismViolationError
 * naming the first mismatch) when it does not.
 */
export async function replaySession(client: Client, sessionId: string): Promise<{ events: number }> {
  const history = await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory();
  await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, sessionWorkflowId(sessionId));
  return { events: history.events?.length ?? 0 };
}
