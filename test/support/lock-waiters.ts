import type { Pool } from 'pg';

/**
 * Waits until `count` backends wait for a lock in a statement matching `like` (SQL LIKE): how a
 * test knows a request has reached the point where it blocks behind a lock the test holds.
 */
export async function lockWaiters(db: Pool, like: string, count = 1): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [like]);
    if (rows[0]!.n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`never saw ${count} lock waiters on ${like}`);
}
