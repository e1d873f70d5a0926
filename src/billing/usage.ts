import type { Pool } from 'pg';
import type { ActorType, AuthMethod, Principal } from '../auth/principal';
import { withTransaction, type Queryable } from '../store/db';
import { debitCredits } from './credits';

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

/** Writes the usage row and debits its credits in one transaction: no debit is ever lost or doubled. */
export async function chargeUsage(pool: Pool, row: UsageRow): Promise<void> {
  await withTransaction(pool, async (client) => {
    await insertUsage(client, row);
    await debitCredits(client, row.projectId, BigInt(row.credits_nano), row.requestId ?? null);
  });
}
