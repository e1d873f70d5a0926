import path from 'node:path';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../../activities';
import type { Deps } from '../deps';

export const WORKFLOWS_PATH = path.join(__dirname, '../../workflows/index.ts');

/** Creates a worker polling the configured task queue, with every workflow and activity. */
export async function createWorker(deps: Deps, overrides: Partial<WorkerOptions> = {}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: deps.config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: createActivities(deps),
    // Heartbeats reach the server at least every second, so an interrupt or a run timeout
    // cancels an in-flight model call promptly (the default throttles to 80% of the timeout).
    maxHeartbeatThrottleInterval: '1 second',
    ...(deps.config.WORKER_MAX_CACHED_WORKFLOWS !== undefined ? { maxCachedWorkflows: deps.config.WORKER_MAX_CACHED_WORKFLOWS } : {}),
    ...overrides,
  });
  return { worker, connection };
}
