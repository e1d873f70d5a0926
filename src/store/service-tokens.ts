import type { Queryable } from './db';
import { newId } from './ids';

export interface ServiceTokenRecord {
  id: string;
  account_id: string;
  client_id: string;
  revoked_at: Date | null;
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
    'SELECT id, account_id, client_id, revoked_at FROM service_tokens WHERE token_hash = $1',
    [hash],
  );
  return rows[0];
}
