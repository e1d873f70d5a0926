import { checkApiConfig, loadConfig } from '../config';
import { closeDeps, createDeps } from '../deps';
import { createApp } from '../api/app';
import { createApiServer } from '../api/server';
import { migrate } from '../store/migrate';
import { runMain, shutdownOn } from './run';

runMain('api', async () => {
  const deps = createDeps(checkApiConfig(loadConfig()));
  await migrate(deps.db, (message) => deps.logger.info(message));
  const app = createApp(deps);
  const server = createApiServer(app);
  await new Promise<void>((resolve) => server.listen(deps.config.PORT, deps.config.HOST, resolve));
  deps.logger.info({ url: `http://${deps.config.HOST}:${deps.config.PORT}` }, 'api listening');
  shutdownOn(deps.logger, async () => {
    // Stop accepting, let in-flight requests finish, then close idle keep-alive sockets and pools.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
    await closeDeps(deps);
  });
});
