import { checkApiConfig, loadConfig } from '../config';
import { closeDeps, createDeps } from '../deps';
import { createApp } from '../api/app';
import { createApiServer } from '../api/server';
import { closeGracefully } from '../net/graceful-close';
import { migrate } from '../store/migrate';
import { firstDatabaseContact, listen, runMain, SHUTDOWN_DRAIN_MS, shutdownOn } from './run';

runMain('api', async () => {
  const deps = createDeps(checkApiConfig(loadConfig()));
  await firstDatabaseContact(deps.config.DATABASE_URL, () => migrate(deps.db, (message) => deps.logger.info(message)));
  const app = createApp(deps);
  const server = createApiServer(app);
  await listen(server, deps.config.PORT, deps.config.HOST, 'PORT');
  deps.logger.info({ url: `http://${deps.config.HOST}:${deps.config.PORT}` }, 'api listening');
  shutdownOn(deps.logger, async () => {
    // Event streams end at once, other requests get the drain window (streams still running
    // then end with their protocol's error); only then is the usage they metered written
    // (closeDeps flushes it) and the pools closed.
    const report = await closeGracefully(server, { drainMs: SHUTDOWN_DRAIN_MS });
    deps.logger.info(report, 'http server closed');
    await closeDeps(deps);
  });
});
