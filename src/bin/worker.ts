import { Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { loadConfig } from '../config';
import { closeDeps, createDeps } from '../deps';
import { migrate } from '../store/migrate';
import { createWorker } from '../temporal/worker';
import { startReconciler } from '../temporal/reconciler';
import { firstDatabaseContact, runMain, shutdownOn } from './run';

runMain('worker', async () => {
  const deps = createDeps(loadConfig());
  // As the api and platform do: an unreachable or unmigrated database stops the worker at start
  // (with a message) instead of its activities and reconciler failing on every pass.
  await firstDatabaseContact(deps.config.DATABASE_URL, () => migrate(deps.db, (message) => deps.logger.info(message)));
  Runtime.install({ telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
  const { worker, connection } = await createWorker(deps);
  deps.logger.info({ taskQueue: deps.config.TEMPORAL_TASK_QUEUE }, 'worker polling');
  const running = worker.run();
  const stopReconciler = startReconciler(deps);
  shutdownOn(deps.logger, async () => {
    stopReconciler();
    worker.shutdown(); // finishes in-flight tasks, then run() resolves
    await running;
    await connection.close();
    await closeDeps(deps);
  });
  await running;
});
