import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { closeGracefully, trackConnections } from '../net/graceful-close';
import { createPool } from '../store/db';
import { migrate } from '../store/migrate';
import { createPlatformServer } from '../platform/app';
import { firstDatabaseContact, listen, runMain, SHUTDOWN_DRAIN_MS, shutdownOn } from './run';

runMain('platform', async () => {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'platform' });
  const db = createPool(config.DATABASE_URL, Math.min(config.DATABASE_POOL_SIZE, 10), config.DATABASE_QUERY_TIMEOUT_MS);
  await firstDatabaseContact(config.DATABASE_URL, () => migrate(db, (message) => logger.info(message)));
  const limits = config.RATE_LIMIT_ENABLED ? { perSecond: config.PLATFORM_RATE_LIMIT_PER_SECOND, burst: config.PLATFORM_RATE_LIMIT_BURST } : null;
  const server = createPlatformServer({ db, logger }, limits);
  // Before it listens: shutdown must know every connection (src/net/graceful-close.ts).
  trackConnections(server);
  await listen(server, config.PLATFORM_PORT, config.HOST, 'PLATFORM_PORT');
  logger.info({ url: `http://${config.HOST}:${config.PLATFORM_PORT}` }, 'platform api listening');
  shutdownOn(logger, async () => {
    const report = await closeGracefully(server, { drainMs: SHUTDOWN_DRAIN_MS });
    logger.info(report, 'http server closed');
    await db.end();
  });
});
