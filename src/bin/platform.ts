import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { createPool } from '../store/db';
import { migrate } from '../store/migrate';
import { createPlatformServer } from '../platform/app';
import { runMain, shutdownOn } from './run';

runMain('platform', async () => {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'platform' });
  const db = createPool(config.DATABASE_URL, Math.min(config.DATABASE_POOL_SIZE, 10));
  await migrate(db, (message) => logger.info(message));
  const limits = config.RATE_LIMIT_ENABLED ? { perSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND, burst: config.PLATFORM_RATE_LIMIT_BURST } : null;
  const server = createPlatformServer({ db, logger }, limits);
  await new Promise<void>((resolve) => server.listen(config.PLATFORM_PORT, config.HOST, resolve));
  logger.info({ url: `http://${config.HOST}:${config.PLATFORM_PORT}` }, 'platform api listening');
  shutdownOn(logger, async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
    await db.end();
  });
});
