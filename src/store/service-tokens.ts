import type { Pool } from 'pg';
import { withTransaction, type Queryable } from './db';
import { newId } from './ids';
import { bindSiteClient, siteOfClient } from './sites';

const SERVICE_TOKEN_COLUMNS = `t.id, t.account_id, t.client_id, t.revoked_at, ${siteOfClient('status', 't.client_id', 't.account_id')} AS site_status`;

export interface ServiceTokenRecord {
  id: string;
  account_id: string;
  client_id: string;
  revoked_at: Date | null;
  /** The status of the site registered with this client, if one is. */
  site_status: string | null;
}

/**
 * A new service token for a site client of an account. A client id belongs to one account:
 * the first that got a token for it or registered a site with it (the binding of
 * `site_clients`, serialized on its row): credentials of two accounts under one client id
 * would share what is keyed by it (the site's status, its primary collection).
 */
export async function insertServiceToken(pool: Pool, token: { accountId: string; clientId: string; hash: Buffer }): Promise<{ id: string }> {
  const id = newId('stok');
  await withTransaction(pool, async (db) => {
    const bound = (await bindSiteClient(db, token.clientId, token.accountId)).accountId;
    // (Under the binding's row lock: also credentials issued before client ids were bound.)
    const { rows } = await db.query<{ taken: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM oauth_clients WHERE client_id = $1 AND account_id <> $2)
           OR EXISTS (SELECT 1 FROM service_tokens WHERE client_id = $1 AND account_id <> $2) AS taken`,
      [token.clientId, token.accountId],
    );
    if (bound !== token.accountId || rows[0]!.taken) throw new Error(`client id ${token.clientId} belongs to another account`);
    await db.query('INSERT INTO service_tokens (id, account_id, client_id, token_hash) VALUES ($1, $2, $3, $4)', [id, token.accountId, token.clientId, token.hash]);
  });
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
