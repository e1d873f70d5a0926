import type { Queryable } from '../store/db';
import type { Pool } from 'pg';
import { withTransaction } from '../store/db';
import { creditsExhausted } from '../api/errors';

/** 1 credit = 1,000,000,000 nano-credits. */
export const NANO_PER_CREDIT = 1_000_000_000n;

export async function getBalanceNano(db: Queryable, projectId: string): Promise<bigint> {
  const { rows } = await db.query<{ balance_nano: string }>({ name: 'balance', text: 'SELECT balance_nano FROM project_credits WHERE project_id = $1', values: [projectId] });
  return rows[0] ? BigInt(rows[0].balance_nano) : 0n;
}

/**
 * Refuses a metered request when the balance is exhausted. The check happens before
 * the upstream call and the debit after it, so concurrent requests can overshoot the
 * balance only by what is already in flight. (The gateway's hot path uses the same rule
 * through CreditAdmission, admission.ts, which skips the read for projects known positive.)
 */
export async function assertCredits(db: Queryable, projectId: string): Promise<void> {
  if ((await getBalanceNano(db, projectId)) <= 0n) throw creditsExhausted();
}

export async function grantCredits(pool: Pool, projectId: string, nano: bigint, reference = 'grant'): Promise<bigint> {
  if (nano <= 0n) throw new Error('a grant must be positive');
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ balance_nano: string }>(
      `INSERT INTO project_credits (project_id, balance_nano) VALUES ($1, $2)
       ON CONFLICT (project_id) DO UPDATE SET balance_nano = project_credits.balance_nano + EXCLUDED.balance_nano, updated_at = now()
       RETURNING balance_nano`,
      [projectId, nano.toString()],
    );
    await client.query(`INSERT INTO credit_ledger (project_id, kind, delta_nano, reference) VALUES ($1, 'grant', $2, $3)`, [
      projectId,
      nano.toString(),
      reference,
    ]);
    return BigInt(rows[0]!.balance_nano);
  });
}

/** Debits inside the caller's transaction: one atomic row update plus a ledger line. */
export async function debitCredits(client: Queryable, projectId: string, nano: bigint, reference: string | null): Promise<void> {
  if (nano <= 0n) return;
  // One statement: the balance and its ledger line change together even outside a transaction.
  await client.query({
    name: 'debit_credits',
    text: `WITH debited AS (UPDATE project_credits SET balance_nano = balance_nano - $2::bigint, updated_at = now() WHERE project_id = $1)
           INSERT INTO credit_ledger (project_id, kind, delta_nano, reference) VALUES ($1, 'debit', -($2::bigint), $3)`,
    values: [projectId, nano.toString(), reference],
  });
}
