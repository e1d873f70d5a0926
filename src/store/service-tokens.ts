import type { Queryable } from './db';
import { newId } from './ids';

export interface ServiceTokenRecord {
  id: string;
  account_id: string;
  client_id: string;
  revoked_at: Date | null;
  /** The status of the site registered with this client, if one is. */
  site_status: string | null;
}

export async function insertServiceToken(db: Queryable, token: { accountId: string; clientId: string; hash: Buffer }): Promise<{ id: string }> {
  const id = newId('stok');
  await db.query('INSERT INTO service_tokens (id, account_id, client_id, token_hash) VALUES ($1, $2, $3, $4)', [
    id,
    token.accountId,
    token.clientId,
    token.hash,
  ]);
  return { id };
}

export async function findServiceTokenByHash(db: Queryable, hash: Buffer): Promise<ServiceTokenRecord | undefined> {
  const { rows } = await db.query<ServiceTokenRecord>(
    `SELECT t.id, t.account_id, t.client_id, t.revoked_at, (SELECT s.status FROM sites s WHERE s.client_id = t.client_id) AS site_status
       FROM service_tokens t WHERE t.token_hash = $1`,
    [hash],
  );
  return rows[0];
}

/** Whether the service token with this id exists and is not revoked. */
export async function isServiceTokenActive(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM service_tokens WHERE id = $1 AND revoked_at IS NULL', [id]);
  return rows.length === 1;
}
