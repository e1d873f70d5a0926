import type { Queryable } from './db';
import { newId } from './ids';
import { siteStatusOfClient } from './sites';

const SERVICE_TOKEN_COLUMNS = `t.id, t.account_id, t.client_id, t.revoked_at, ${siteStatusOfClient('t.client_id')} AS site_status`;

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
    `SELECT ${SERVICE_TOKEN_COLUMNS} FROM service_tokens t WHERE t.token_hash = $1`,
    [hash],
  );
  return rows[0];
}

export async function findServiceTokenById(db: Queryable, id: string): Promise<ServiceTokenRecord | undefined> {
  const { rows } = await db.query<ServiceTokenRecord>(`SELECT ${SERVICE_TOKEN_COLUMNS} FROM service_tokens t WHERE t.id = $1`, [id]);
  return rows[0];
}

/** Revokes a service token (admin CLI); false when there is none with this id. */
export async function revokeServiceToken(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE service_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1', [id]);
  return rowCount === 1;
}
