import type { Pool } from 'pg';
import { uniqueId } from './config';
import { createAccount, createProject } from '../../src/store/accounts';
import { issueApiKey, issueServiceToken, type NewApiKey } from '../../src/auth/provisioning';
import { grantCredits, NANO_PER_CREDIT } from '../../src/billing/credits';
import type { UsageRow } from '../../src/billing/usage';

export interface Tenant {
  accountId: string;
  projectId: string;
  /** An `all` API key of the project. */
  key: string;
  keyId: string;
}

/** A fresh account, project (with `credits` credits, default 100) and an `all` key. */
export async function createTenant(db: Pool, options: { credits?: bigint } = {}): Promise<Tenant> {
  const account = await createAccount(db, 'test account');
  const project = await createProject(db, account.id, 'test project');
  const credits = options.credits ?? 100n;
  if (credits > 0n) await grantCredits(db, project.id, credits * NANO_PER_CREDIT, 'test');
  const key = await issueApiKey(db, { projectId: project.id, preset: 'all' });
  return { accountId: account.id, projectId: project.id, key: key.key, keyId: key.id };
}

export async function createKey(db: Pool, input: NewApiKey): Promise<{ key: string; id: string }> {
  const key = await issueApiKey(db, input);
  return { key: key.key, id: key.id };
}

/** A second project in the same account (for cross-project tests). */
export async function createSiblingProject(db: Pool, accountId: string): Promise<string> {
  return (await createProject(db, accountId, 'sibling project')).id;
}

/** A service token of the account; its client id is new unless given (a client id belongs to one account). */
export async function createServiceToken(db: Pool, accountId: string, clientId = uniqueId('client-')): Promise<string> {
  return (await issueServiceToken(db, accountId, clientId)).token;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** Response bodies in tests are read loosely typed; assertions check their shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const json = (response: Response): Promise<any> => response.json();

/** A one-token usage row of a project (metering and analytics tests); override what matters. */
export function usageRow(projectId: string, overrides: Partial<UsageRow> = {}): UsageRow {
  return {
    projectId,
    model: 'probe/model',
    operation: 'chat',
    clientId: null,
    authMethod: 'api_key',
    actorType: 'service',
    application: 'unknown',
    input_tokens: 1,
    output_tokens: 1,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    reasoning_tokens: 0,
    credits_nano: 1_000,
    ...overrides,
  };
}

/**
 * A POST whose body of `bytes` bytes is streamed in 16 KiB chunks with no Content-Length
 * (chunked transfer encoding), so only the server's running count can refuse it.
 */
export function postStreamed(url: string, headers: Record<string, string>, bytes: number): Promise<Response> {
  const chunk = new Uint8Array(16 * 1024).fill(0x20);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const next = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
      sent += next.length;
      controller.enqueue(next);
    },
  });
  return fetch(url, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
}
