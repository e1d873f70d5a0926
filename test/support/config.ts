import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/config';

/** Test configuration: the real local services, the test database and a unique task queue. */
export function testConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  return loadConfig({
    ...process.env,
    ENVIRONMENT: 'development',
    LOG_LEVEL: 'info',
    DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://gateway:gateway@127.0.0.1:54329/gateway_test',
    ELASTICSEARCH_INDEX_PREFIX: 'test-kb',
    TEMPORAL_TASK_QUEUE: `test-${randomBytes(6).toString('hex')}`,
    DATABASE_POOL_SIZE: '10',
    ...overrides,
  });
}

export const uniqueId = (prefix = 't'): string => `${prefix}${randomBytes(8).toString('hex')}`;
