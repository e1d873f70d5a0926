import { Client, Connection } from '@temporalio/client';

export interface TemporalConnectionSettings {
  address: string;
  namespace: string;
}

/**
 * A lazily connected Temporal client: the api starts (and answers /healthz) even
 * when Temporal is down, and reconnects on the next use after a failure.
 */
export class LazyTemporalClient {
  private pending?: Promise<Client>;
  constructor(private readonly settings: TemporalConnectionSettings) {}

  get(): Promise<Client> {
    if (!this.pending) {
      this.pending = Connection.connect({
        address: this.settings.address,
        connectTimeout: 3000,
        // gRPC backs off reconnecting up to 120 s by default: after an outage the api and the
        // reconciler would go on failing for half a minute or more once Temporal is back.
        channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2000 },
      })
        .then((connection) => new Client({ connection, namespace: this.settings.namespace }))
        .catch((error) => {
          this.pending = undefined;
          throw error;
        });
    }
    return this.pending;
  }

  /** Asks the frontend's gRPC health service; throws when Temporal is unreachable. */
  async checkHealth(): Promise<void> {
    const client = await this.get();
    const connection = client.connection as Connection;
    // A deadline stops the client's built-in retries, which would otherwise keep going
    // (past this check's own timeout) while Temporal is down.
    await connection.withDeadline(Date.now() + 2000, () => connection.healthService.check({}));
  }

  async close(): Promise<void> {
    const pending = this.pending;
    this.pending = undefined;
    if (pending) await pending.then((client) => client.connection.close()).catch(() => undefined);
  }
}

/**
 * Terminates every running workflow on a task queue. Benchmarks and tests run on private
 * queues and end their session workflows with this, so none is left running (and listed as
 * `running` in the Temporal UI) with nothing polling its queue.
 */
export async function terminateRunningOnQueue(client: Client, taskQueue: string, reason: string): Promise<number> {
  let count = 0;
  for await (const workflow of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) {
    await client.workflow
      .getHandle(workflow.workflowId)
      .terminate(reason)
      .then(() => count++)
      .catch(() => undefined); // finished meanwhile
  }
  return count;
}
