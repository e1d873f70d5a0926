import { loadConfig } from '../config';
import { createLogger } from '../logger';
import { startSimulator } from '../providers/simulator/server';
import { runMain, shutdownOn } from './run';

runMain('simulator', async () => {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'simulator' });
  const simulator = await startSimulator({ port: config.SIMULATOR_PORT, host: config.HOST });
  logger.info({ url: simulator.url }, 'provider simulator listening');
  shutdownOn(logger, () => simulator.close());
});
