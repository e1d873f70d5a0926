import type { RunUsage } from '../domain/run';
import type { Queryable } from './db';

/**
 * Records what a broken model call used (see migration 056). Idempotent by `key`: a retried
 * write of the same attempt records it once.
 */
export async function recordBrokenAttempt(db: Queryable, runId: string, key: string, usage: RunUsage): Promise<void> {
  await db.query('INSERT INTO run_attempt_usage (key, run_id, usage) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING', [key, runId, JSON.stringify(usage)]);
}

/** Takes the run's recorded broken calls off the table (the caller bills them in the same transaction). */
export async function takeBrokenAttempts(db: Queryable, runId: string): Promise<RunUsage[]> {
  const { rows } = await db.query<{ usage: RunUsage }>('DELETE FROM run_attempt_usage WHERE run_id = $1 RETURNING usage', [runId]);
  return rows.map((row) => row.usage);
}
