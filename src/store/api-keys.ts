import type { Access } from '../auth/principal';
import type { Preset, Scope } from '../auth/scopes';
import type { Queryable } from './db';
import { newId } from './ids';

export interface ApiKeyRecord {
  id: string;
  project_id: string;
  account_id: string;
  preset: Preset;
  scopes: Record<Scope, Access>;
  key_type: 'standard' | 'personal' | 'project';
  owner_subject: string | null;
  revoked_at: Date | null;
}

export interface ApiKeyListing {
  id: string;
  project_id: string;
  display_prefix: string;
  preset: Preset;
  scopes: Record<Scope, Access>;
  key_type: string;
  owner_subject: string | null;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

export async function insertApiKey(
  db: Queryable,
  key: { projectId: string; hash: Buffer; displayPrefix: string; preset: Preset; scopes: Record<Scope, Access>; keyType: string; ownerSubject: string | null },
): Promise<ApiKeyListing> {
  const { rows } = await db.query<ApiKeyListing>(
    `INSERT INTO api_keys (id, project_id, key_hash, display_prefix, preset, scopes, key_type, owner_subject)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING id, project_id, display_prefix, preset, scopes, key_type, owner_subject, created_at, revoked_at, last_used_at`,
    [newId('key'), key.projectId, key.hash, key.displayPrefix, key.preset, JSON.stringify(key.scopes), key.keyType, key.ownerSubject],
  );
  return rows[0]!;
}

export async function findApiKeyByHash(db: Queryable, hash: Buffer): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT k.id, k.project_id, p.account_id, k.preset, k.scopes, k.key_type, k.owner_subject, k.revoked_at
       FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = $1`,
    [hash],
  );
  return rows[0];
}

/** Records use at most once a minute per key, so the hot path rarely writes. */
/** Whether the key with this id exists and is not revoked (browser tokens it minted die with it). */
export async function isApiKeyActive(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query({ name: 'api_key_active', text: 'SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL', values: [id] });
  return rows.length === 1;
}

export async function touchApiKey(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [id],
  );
}

/**
 * Channel on which a revocation is announced. api processes cache key lookups and LISTEN
 * here (src/auth/api-key-cache.ts); the payload is the key id.
 */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

type RevocationListener = (keyId: string) => void;
// In-process subscribers (the api-key caches of this process). A revocation made through
// this process drops its own cached entries as soon as the UPDATE has committed, without
// waiting for the NOTIFY to come back over the listener connection; other processes learn
// of it from the NOTIFY.
const localRevocationListeners = new Set<RevocationListener>();
export function onApiKeyRevoked(listener: RevocationListener): () => void {
  localRevocationListeners.add(listener);
  return () => localRevocationListeners.delete(listener);
}

/**
 * Irreversible: a revoked key never becomes active again. Returns false for an unknown id.
 * The NOTIFY is issued by the same statement, so it is part of the revoking transaction:
 * every listening api process receives it exactly when the revocation commits (and never
 * for a revocation that rolled back).
 */
export async function revokeApiKey(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH revoked AS (UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING id)
     SELECT pg_notify('${API_KEY_REVOKED_CHANNEL}', id) FROM revoked`,
    [id],
  );
  if (rowCount !== 1) return false;
  // Inside a caller's transaction this runs before its COMMIT; dropping a cache entry early
  // is harmless (the next lookup reads the row again).
  for (const listener of localRevocationListeners) listener(id);
  return true;
}

export async function listApiKeys(db: Queryable, projectId: string): Promise<ApiKeyListing[]> {
  const { rows } = await db.query<ApiKeyListing>(
    `SELECT id, project_id, display_prefix, preset, scopes, key_type, owner_subject, created_at, revoked_at, last_used_at
       FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`,
    [projectId],
  );
  return rows;
}
