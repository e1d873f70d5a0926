import type { Pool } from 'pg';
import type { RunUsage } from '../domain/run';
import { withTransaction, type Queryable } from './db';
import { lockSession } from './events';

/**
 * Records what a broken model call used (see migration 056), under the session's row lock and
 * only while its run still holds the session: the run's close (which takes the same lock) then
 * always sees it. A call that broke after its run was closed (by an operator, or a timeout while
 * the worker stalled) is not recorded: its run's charge is final. Idempotent by `key`.
 */
export async function recordBrokenAttempt(db: Pool, sessionId: string, runId: string, key: string, usage: RunUsage): Promise<void> {
  await withTransaction(db, async (client) => {
    if ((await lockSession(client, sessionId))?.active_run_id !== runId) return;
    await client.query('INSERT INTO run_attempt_usage (key, run_id, usage) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING', [key, runId, JSON.stringify(usage)]);
  });
}

/** Removes the run's recorded broken calls once its close has billed them (same transaction). */
export async function clearBrokenAttempts(db: Queryable, runId: string): Promise<void> {
  await db.query('DELETE FROM run_attempt_usage WHERE run_id = $1', [runId]);
}
