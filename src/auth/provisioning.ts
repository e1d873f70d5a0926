import type { Pool } from 'pg';
import type { Queryable } from '../store/db';
import { insertApiKey, type ApiKeyListing } from '../store/api-keys';
import { insertServiceToken } from '../store/service-tokens';
import { displayPrefix, generateApiKey, hashSecret } from './api-keys';
import type { Access } from './principal';
import { scopesForPreset, type Preset, type Scope } from './scopes';
import { generateServiceToken } from './tokens';

/**
 * Issuing credentials (the console's actions; used by the admin CLI and test factories).
 * Secrets are returned once here and never stored.
 */
export interface NewApiKey {
  projectId: string;
  preset: Preset;
  scopes?: Partial<Record<Scope, Access>>;
  type?: 'personal' | 'project';
  ownerSubject?: string;
}

export async function issueApiKey(db: Queryable, input: NewApiKey): Promise<ApiKeyListing & { key: string }> {
  if (input.type === 'personal' && !input.ownerSubject) throw new Error('a personal key needs --owner-subject');
  if (input.type === 'project' && input.ownerSubject) throw new Error('a project key has no owner subject');
  const key = generateApiKey();
  const record = await insertApiKey(db, {
    projectId: input.projectId,
    hash: hashSecret(key),
    displayPrefix: displayPrefix(key),
    preset: input.preset,
    scopes: scopesForPreset(input.preset, input.scopes),
    keyType: input.type ?? 'standard',
    ownerSubject: input.type === 'personal' ? input.ownerSubject! : null,
  });
  return { ...record, key };
}

export async function issueServiceToken(db: Pool, accountId: string, clientId: string): Promise<{ id: string; token: string }> {
  const token = generateServiceToken();
  const { id } = await insertServiceToken(db, { accountId, clientId, hash: hashSecret(token) });
  return { id, token };
}
