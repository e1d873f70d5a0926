import type { Pool } from 'pg';
import type { ActorType, AuthMethod, Principal } from '../auth/principal';
import { backoffMs, pause } from '../backoff';
import type { Queryable } from '../store/db';
import { dataFault, databaseNotReached } from '../store/db-errors';

export { assertCredits } from './credits';

export const APPLICATIONS = [
  'svc-ai-chatbot',
  'svc-ai-playground',
  'svc-coworker',
  'svc-connector',
  'svc-agents',
  'svc-kb-sync',
  'third_party',
  'unknown',
] as const;
export type Application = (typeof APPLICATIONS)[number];

/** The request header that names the calling application for analytics. */
export const APPLICATION_HEADER = 'x-application';

export function applicationFrom(header: string | undefined): Application {
  return (APPLICATIONS as readonly string[]).includes(header ?? '') ? (header as Application) : 'unknown';
}

export interface UsageRow {
  projectId: string;
  keyId?: string | null;
  model: string;
  operation: string;
  clientId?: string | null;
  authMethod: AuthMethod;
  actorType: ActorType;
  application: Application;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  reasoning_tokens: number;
  credits_nano: number;
  requestId?: string | null;
  createdAt?: Date;
}

/** The usage-row fields that come from who is calling. */
export function callerFields(principal: Principal, applicationHeader?: string) {
  return {
    projectId: principal.projectId!,
    keyId: principal.keyId ?? null,
    clientId: principal.clientId ?? null,
    authMethod: principal.method,
    actorType: principal.actorType,
    application: applicationFrom(applicationHeader),
  };
}

export async function insertUsage(client: Queryable, row: UsageRow): Promise<void> {
  await client.query(
    `INSERT INTO usage_records (created_at, project_id, key_id, model, operation, client_id, auth_method, actor_type, application,
       input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, reasoning_tokens, credits_nano, request_id)
     VALUES (COALESCE($1, now()), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [
      row.createdAt ?? null,
      row.projectId,
      row.keyId ?? null,
      row.model,
      row.operation,
      row.clientId ?? '',
      row.authMethod,
      row.actorType,
      row.application,
      row.input_tokens,
      row.output_tokens,
      row.cache_read_input_tokens,
      row.cache_creation_input_tokens,
      row.reasoning_tokens,
      row.credits_nano,
      row.requestId ?? null,
    ],
  );
}

/**
 * Writes the usage row and debits its credits: no debit is ever lost or doubled. Resolves
 * once both are committed. Rows are written by the pool's UsageWriter, which puts every row
 * waiting at that moment into one statement (see writeUsageBatch).
 */
export function chargeUsage(pool: Pool, row: UsageRow): Promise<void> {
  let writer = writers.get(pool);
  if (!writer) {
    writer = new UsageWriter(pool);
    writers.set(pool, writer);
  }
  return writer.write(row);
}

const writers = new WeakMap<Pool, UsageWriter>();
const MAX_BATCH = 500;
const MIN_STATEMENT_INTERVAL_MS = 5;
/** Deadlock and serialization failures: the statement wrote nothing, so running it again is safe. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

interface PendingRow {
  row: UsageRow;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for metering. At most one statement is in flight per pool, and statements
 * start at most every MIN_STATEMENT_INTERVAL_MS; rows that arrive meanwhile wait and then
 * go together in the next one. A quiet gateway writes each row at once (no added delay);
 * a busy one writes one statement per interval instead of one per request (at 500
 * requests/s the per-statement socket writes and Postgres work were a fifth of the api's
 * CPU), and the statement-level rollup trigger (migration 041) runs once per batch.
 * Metering is off the response path, so the wait is never the client's.
 *
 * Crash safety: a row is only in memory until its statement commits, exactly the window
 * an in-flight transaction had before; callers that must know it is durable await the
 * promise. The debit is derived from the inserted usage rows inside that same statement,
 * so usage and debit commit together or not at all: a crash can never leave one without
 * the other, and a retried statement cannot double anything because a failed one wrote
 * nothing.
 */
class UsageWriter {
  private queue: PendingRow[] = [];
  private flushing = false;
  private lastStatementAt = -Infinity;
  private closing = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly pool: Pool) {}

  /** Writes what is queued at once and resolves when nothing is left (graceful shutdown). */
  async close(): Promise<void> {
    this.closing = true;
    if (!this.flushing && this.queue.length === 0) return;
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    if (!this.flushing) void this.flush();
    await idle;
  }

  write(row: UsageRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const wait = this.lastStatementAt + MIN_STATEMENT_INTERVAL_MS - performance.now();
        if (wait > 0 && !this.closing) await new Promise((resolve) => setTimeout(resolve, wait));
        this.lastStatementAt = performance.now();
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await writeWithRetry(this.pool, batch.map((pending) => pending.row));
          for (const pending of batch) pending.resolve();
        } catch (error) {
          // Only a row's own data is worth retrying without it. Anything else fails the batch
          // (after the back-off): a connection lost mid-statement may have committed it, and
          // writing its rows again would bill them twice.
          if (batch.length === 1 || !dataFault(error)) {
            for (const pending of batch) pending.reject(error);
            continue;
          }
          // One bad row must not fail the others: write them one by one.
          for (const pending of batch) {
            await writeWithRetry(this.pool, [pending.row]).then(pending.resolve, pending.reject);
          }
        }
      }
    } finally {
      this.flushing = false;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }
}

/** Writes every usage row still queued for this pool; call before ending the pool. */
export async function flushUsage(pool: Pool): Promise<void> {
  await writers.get(pool)?.close();
}

const writeWithRetry = (db: Queryable, rows: UsageRow[]): Promise<void> => retryUnapplied(() => writeUsageBatch(db, rows));

/**
 * Back-off between attempts when Postgres could not be reached: doubling from 250 ms to 8 s,
 * for up to UNREACHED_RETRY_FOR_MS in all (by the clock, or by the pauses alone when the
 * attempts take no time). Served calls are billed after an outage of minutes (their rows wait
 * in memory meanwhile, a few hundred bytes each), unless the process is stopped before.
 */
export const unreachedBackoffMs = (attempt: number): number => backoffMs(attempt, 8000);
export const UNREACHED_RETRY_FOR_MS = 10 * 60_000;

/**
 * Runs a metering statement again when it provably wrote nothing: a deadlock or
 * serialization failure (up to three attempts), or Postgres not reached at all (a pool
 * connect timeout under load, a restart), with back-off. A completion already served is then
 * still billed once Postgres answers, instead of being lost.
 */
export async function retryUnapplied(write: () => Promise<void>, sleep: (ms: number) => Promise<void> = pause): Promise<void> {
  let conflicts = 0;
  let unreached = 0;
  let waited = 0;
  const started = Date.now();
  for (;;) {
    try {
      return await write();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code && RETRYABLE_SQLSTATES.has(code) && ++conflicts < 3) continue;
      if (databaseNotReached(error) && waited < UNREACHED_RETRY_FOR_MS && Date.now() - started < UNREACHED_RETRY_FOR_MS) {
        const pause = unreachedBackoffMs(unreached++);
        waited += pause;
        await sleep(pause);
        continue;
      }
      throw error;
    }
  }
}

/**
 * One statement (hence one transaction): inserts the usage rows, then from exactly the rows
 * inserted writes one ledger line per charged row and subtracts each project's sum from its
 * balance. Balance rows are locked in project order so concurrent batches from several api
 * processes cannot deadlock on each other (a deadlock with another writer is retried).
 */
export async function writeUsageBatch(db: Queryable, rows: UsageRow[]): Promise<void> {
  const column = <T>(pick: (row: UsageRow) => T) => rows.map(pick);
  await db.query({
    name: 'usage-batch',
    text: `WITH inserted AS (
             INSERT INTO usage_records (created_at, project_id, key_id, model, operation, client_id, auth_method, actor_type, application,
               input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, reasoning_tokens, credits_nano, request_id)
             SELECT COALESCE(r.created_at, now()), r.project_id, r.key_id, r.model, r.operation, r.client_id, r.auth_method, r.actor_type,
                    r.application, r.input_tokens, r.output_tokens, r.cache_read_input_tokens, r.cache_creation_input_tokens,
                    r.reasoning_tokens, r.credits_nano, r.request_id
               FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                           $9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[])
                 AS r(created_at, project_id, key_id, model, operation, client_id, auth_method, actor_type, application, input_tokens,
                      output_tokens, cache_read_input_tokens, cache_creation_input_tokens, reasoning_tokens, credits_nano, request_id)
             RETURNING project_id, credits_nano, request_id
           ), ledger AS (
             INSERT INTO credit_ledger (project_id, kind, delta_nano, reference)
             SELECT project_id, 'debit', -credits_nano, request_id FROM inserted WHERE credits_nano > 0
           ), debits AS (
             SELECT project_id, sum(credits_nano) AS total FROM inserted WHERE credits_nano > 0 GROUP BY project_id
           ), locked AS MATERIALIZED (
             SELECT c.project_id FROM project_credits c WHERE c.project_id IN (SELECT project_id FROM debits)
              ORDER BY c.project_id FOR UPDATE
           )
           UPDATE project_credits c SET balance_nano = c.balance_nano - d.total, updated_at = now()
             FROM debits d JOIN locked l ON l.project_id = d.project_id
            WHERE c.project_id = d.project_id`,
    values: [
      column((r) => r.createdAt ?? null),
      column((r) => r.projectId),
      column((r) => r.keyId ?? null),
      column((r) => r.model),
      column((r) => r.operation),
      column((r) => r.clientId ?? ''),
      column((r) => r.authMethod),
      column((r) => r.actorType),
      column((r) => r.application),
      column((r) => r.input_tokens),
      column((r) => r.output_tokens),
      column((r) => r.cache_read_input_tokens),
      column((r) => r.cache_creation_input_tokens),
      column((r) => r.reasoning_tokens),
      column((r) => r.credits_nano),
      column((r) => r.requestId ?? null),
    ],
  });
}
