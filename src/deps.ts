import type { Config } from './config';
import { createLogger, type Logger } from './logger';
import { flushUsage } from './billing/usage';
import { createPool, type Db } from './store/db';
import { createSearchClient, type SearchClient } from './search/client';
import { LazyTemporalClient } from './temporal/client';

/**
 * The process-wide dependencies the api and the worker are built from. Created once
 * at start-up from the parsed config and injected everywhere; tests build their own
 * with overridden config.
 */
export interface Deps {
  config: Config;
  logger: Logger;
  db: Db;
  search: SearchClient;
  temporal: LazyTemporalClient;
}

export function createDeps(config: Config, logger: Logger = createLogger({ level: config.LOG_LEVEL })): Deps {
  return {
    config,
    logger,
    db: createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE, config.DATABASE_QUERY_TIMEOUT_MS),
    search: createSearchClient(config.ELASTICSEARCH_URL),
    temporal: new LazyTemporalClient({ address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE }),
  };
}

export async function closeDeps(deps: Deps): Promise<void> {
  // Metering is written after responses, in batches: what is still queued goes out first.
  await flushUsage(deps.db).catch((error: unknown) => deps.logger.error({ err: error }, 'usage rows could not be written at shutdown'));
  await Promise.allSettled([deps.db.end(), deps.search.close(), deps.temporal.close()]);
}
