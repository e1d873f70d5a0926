import { createPool } from '../../src/store/db';
import { migrate } from '../../src/store/migrate';
import { testConfig } from './config';

/** Runs once before the integration tests: the test database gets every migration. */
export default async function globalSetup(): Promise<void> {
  const config = testConfig();
  const pool = createPool(config.DATABASE_URL, 2);
  try {
    await migrate(pool);
  } catch (error) {
    throw new Error(
      `cannot prepare the test database at ${config.DATABASE_URL}: ${(error as Error).message}. ` +
        'Run the tests with `npm test`, which starts Postgres, Temporal and Elasticsearch first.',
    );
  } finally {
    await pool.end();
  }
}
