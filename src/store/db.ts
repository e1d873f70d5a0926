import { Pool, type PoolClient } from 'pg';

export type Db = Pool;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<Pool, 'query'> | PoolClient;

const POOL_ENDING = 'ending';

export function createPool(url: string, max = 20): Pool {
  const pool = new Pool({ connectionString: url, max, idleTimeoutMillis: 30000, connectionTimeoutMillis: 5000 });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', () => undefined);
  // pg's Pool has no event for its end; what keeps a connection of its own beside the pool
  // (the LISTEN feeds) closes on this one (onPoolEnding).
  const end = pool.end.bind(pool) as (callback?: () => void) => Promise<void> | void;
  pool.end = ((callback?: () => void) => {
    pool.emit(POOL_ENDING);
    return end(callback);
  }) as Pool['end'];
  return pool;
}

/** Runs `onEnding` once when a pool made by createPool starts ending. */
export function onPoolEnding(pool: Pool, onEnding: () => void): void {
  pool.once(POOL_ENDING, onEnding);
}

/** Runs `work` in one transaction; rolls back on any error and rethrows it. */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
