import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestApi } from '../../support/harness';

/**
 * Reads what the events API signalled to a session's workflow from Temporal itself. The
 * tests run on a task queue no worker polls, so the workflow never runs and its history
 * holds exactly the signals that were sent.
 */
export async function signalsSent(api: TestApi, sessionId: string): Promise<Array<{ name: string; args: unknown[] }>> {
  const client = await api.deps.temporal.get();
  try {
    const history = await client.workflow.getHandle(`session/${sessionId}`).fetchHistory();
    return (history.events ?? [])
      .map((event) => event.workflowExecutionSignaledEventAttributes)
      .filter((attributes): attributes is NonNullable<typeof attributes> => !!attributes)
      .map((attributes) => ({
        name: attributes.signalName ?? '',
        args: (attributes.input?.payloads ?? []).map((payload) => JSON.parse(Buffer.from(payload.data ?? new Uint8Array()).toString('utf8'))),
      }));
  } catch (error) {
    // fetchHistory surfaces the raw gRPC NOT_FOUND (code 5) rather than WorkflowNotFoundError.
    if (error instanceof WorkflowNotFoundError || (error as { code?: number }).code === 5) return [];
    throw error;
  }
}

/** Ends the idle workflows a test started, so the dev server does not keep them. */
export async function terminateWorkflows(api: TestApi, sessionIds: string[]): Promise<void> {
  const client = await api.deps.temporal.get();
  await Promise.all(sessionIds.map((id) => client.workflow.getHandle(`session/${id}`).terminate('test finished').catch(() => undefined)));
}
