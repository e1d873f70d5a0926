import { loadConfig } from '../config';
import { createPool } from '../store/db';
import { migrate } from '../store/migrate';
import { runMain } from './run';

runMain('migrate', async () => {
  const config = loadConfig();
  const pool = createPool(config.DATABASE_URL, 2);
  const applied = await migrate(pool, (message) => process.stdout.write(`${message}\n`));
  process.stdout.write(applied.length === 0 ? 'database is up to date\n' : `applied ${applied.length} migration(s)\n`);
  await pool.end();
});
