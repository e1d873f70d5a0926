import type { Queryable } from './db';
import { newId } from './ids';
import { siteOfClient } from './sites';

export interface OAuthClientRow {
  client_id: string;
  client_secret_hash: Buffer;
  account_id: string;
  registered_by: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  revoked_at: Date | null;
  /** The status of the site the client registered, if it registered one. */
  site_status: string | null;
}

export async function insertOAuthClient(
  db: Queryable,
  client: { clientId: string; secretHash: Buffer; accountId: string; registeredBy: string; metadata: Record<string, unknown> },
): Promise<OAuthClientRow | undefined> {
  // Nothing is inserted (and undefined returned) for an account the gateway does not have.
  const { rows } = await db.query<OAuthClientRow>(
    `INSERT INTO oauth_clients (client_id, client_secret_hash, account_id, registered_by, metadata)
     SELECT $1, $2, id, $4, $5 FROM accounts WHERE id = $3
     RETURNING client_id, client_secret_hash, account_id, registered_by, metadata, created_at, revoked_at`,
    [client.clientId, client.secretHash, client.accountId, client.registeredBy, JSON.stringify(client.metadata)],
  );
  return rows[0];
}

export async function findOAuthClient(db: Queryable, clientId: string): Promise<OAuthClientRow | undefined> {
  const { rows } = await db.query<OAuthClientRow>(
    `SELECT o.client_id, o.client_secret_hash, o.account_id, o.registered_by, o.metadata, o.created_at, o.revoked_at, ${siteOfClient('status', 'o.client_id', 'o.account_id')} AS site_status
       FROM oauth_clients o WHERE o.client_id = $1`,
    [clientId],
  );
  return rows[0];
}

export interface OAuthAccessTokenRecord {
  id: string;
  client_id: string;
  account_id: string;
  scope: string;
  expires_at: Date;
  revoked_at: Date | null;
  /** The status of the site registered with this client, if one is. */
  site_status: string | null;
}

export async function insertOAuthAccessToken(
  db: Queryable,
  token: { hash: Buffer; clientId: string; accountId: string; scope: string; expiresAt: Date },
): Promise<{ id: string }> {
  const id = newId('oat');
  await db.query(
    'INSERT INTO oauth_access_tokens (id, token_hash, client_id, account_id, scope, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [id, token.hash, token.clientId, token.accountId, token.scope, token.expiresAt],
  );
  return { id };
}

export async function findOAuthAccessTokenByHash(db: Queryable, hash: Buffer): Promise<OAuthAccessTokenRecord | undefined> {
  const { rows } = await db.query<OAuthAccessTokenRecord>(
    `SELECT t.id, t.client_id, t.account_id, t.scope, t.expires_at, t.revoked_at, ${siteOfClient('status', 't.client_id', 't.account_id')} AS site_status
       FROM oauth_access_tokens t WHERE t.token_hash = $1`,
    [hash],
  );
  return rows[0];
}

/**
 * Revokes an OAuth client (the admin CLI's `oauth revoke-client`): its secret gets no more
 * tokens and its live tokens stop working. Returns how many tokens were live, or undefined
 * when there is no such client.
 */
export async function revokeOAuthClient(db: Queryable, clientId: string): Promise<number | undefined> {
  const client = await db.query('UPDATE oauth_clients SET revoked_at = COALESCE(revoked_at, now()) WHERE client_id = $1', [clientId]);
  if (client.rowCount !== 1) return undefined;
  const { rowCount } = await db.query('UPDATE oauth_access_tokens SET revoked_at = now() WHERE client_id = $1 AND revoked_at IS NULL AND expires_at > now()', [clientId]);
  return rowCount ?? 0;
}
