import { Client, Pool, type PoolClient } from 'pg';
import { backoffMs, pause } from '../backoff';
import { databaseUnavailable } from './db-errors';

export type Db = Pool;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<Pool, 'query'> | PoolClient;

const POOL_ENDING = 'ending';

/**
 * The longest a statement may take by default (DATABASE_QUERY_TIMEOUT_MS), lock waits included.
 * Postgres cancels it then (statement_timeout: it stops running, and a transaction it was in
 * rolls back), and the statement fails as an outage (503). A few seconds later the client gives
 * up by itself (query_timeout): a Postgres that stopped answering (a network partition: the
 * socket stays open) would otherwise keep the request waiting for ever; that connection is
 * discarded. Far above what the gateway's statements take; migrations, which may take longer,
 * run without either.
 */
export const QUERY_TIMEOUT_MS = 30_000;
const CLIENT_TIMEOUT_MARGIN_MS = 5_000;

const connectionSettings = (url: string) => ({ connectionString: url, connectionTimeoutMillis: 5000, keepAlive: true });

export function createPool(url: string, max = 20, queryTimeoutMs = QUERY_TIMEOUT_MS): Pool {
  const pool = new Pool({ ...connectionSettings(url), max, idleTimeoutMillis: 30000, statement_timeout: queryTimeoutMs, query_timeout: queryTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', () => undefined);
  // Nor one that is checked out: pg emits 'error' on the client too (pg-pool listens only while
  // it is idle), and an 'error' event nobody listens to ends the process. The statement in
  // flight fails with the same error, and its holder releases the connection as broken.
  pool.on('connect', (client) => client.on('error', () => undefined));
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

/**
 * Runs `work` in one transaction; rolls back on any error and rethrows it. A connection that
 * failed (lost, or a statement timed out) is discarded rather than returned to the pool: its
 * transaction ends with it, and a ROLLBACK on it would only wait for the timeout again.
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (databaseUnavailable(error)) broken = error as Error;
    else await client.query('ROLLBACK').catch((rollbackFailed: Error) => (broken = rollbackFailed));
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * A connection of its own with the pool's settings but no statement timeout, for work that may
 * rightly take long (migrations, which also wait for each other's lock). The caller ends it.
 */
export async function connectWithoutTimeout(pool: Pool): Promise<Client> {
  const client = new Client(connectionSettings((pool.options as { connectionString: string }).connectionString));
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/**
 * Runs `work` again while Postgres is unavailable (refused, restarting, a connection lost or a
 * statement timed out), with back-off doubling to 4 s, starting attempts for up to `forMs` (the
 * last one may then take its statements' timeouts); any other error, or `signal` aborting,
 * ends it. Only for work that is safe to run twice (idempotent writes): a connection lost at
 * its commit may have applied it.
 */
export async function retryWhileDatabaseUnavailable<T>(work: () => Promise<T>, options: { forMs: number; signal?: AbortSignal }): Promise<T> {
  const deadline = Date.now() + options.forMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!databaseUnavailable(error) || Date.now() >= deadline || options.signal?.aborted) throw error;
      await pause(Math.min(backoffMs(attempt, 4000), Math.max(0, deadline - Date.now())), options.signal);
    }
  }
}

