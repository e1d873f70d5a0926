import type { Pool } from 'pg';
import { withTransaction, type Queryable } from './db';
import { newId } from './ids';
import { siteOfClient } from './sites';

const SERVICE_TOKEN_COLUMNS = `t.id, t.account_id, t.client_id, t.revoked_at, ${siteOfClient('status', 't.client_id', 't.account_id')} AS site_status`;

export interface ServiceTokenRecord {
  id: string;
  account_id: string;
  client_id: string;
  revoked_at: Date | null;
  /** The status of the site registered with this client, if one is. */
  site_status: string | null;
}

/** The client id is another account's (a token, an OAuth client or a site registration of it). */
export class ClientIdTaken extends Error {}

/**
 * A new service token for a site client of an account. A client id belongs to one account:
 * credentials of two accounts under one client id would share what is keyed by it (the
 * site's status, its primary collection).
 */
export async function insertServiceToken(pool: Pool, token: { accountId: string; clientId: string; hash: Buffer }): Promise<{ id: string }> {
  const id = newId('stok');
  const { rowCount } = await withTransaction(pool, async (db) => {
    // Two accounts asking for one new client id at once: one waits, then sees the other's token.
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('service-token-client:' || $1))`, [token.clientId]);
    return db.query(
      `INSERT INTO service_tokens (id, account_id, client_id, token_hash)
         SELECT $1, $2, $3, $4
          WHERE NOT EXISTS (SELECT 1 FROM service_tokens WHERE client_id = $3 AND account_id <> $2)
            AND NOT EXISTS (SELECT 1 FROM site_clients WHERE client_id = $3 AND account_id <> $2)
            AND NOT EXISTS (SELECT 1 FROM oauth_clients WHERE client_id = $3 AND account_id <> $2)`,
      [id, token.accountId, token.clientId, token.hash],
    );
  });
  if (rowCount !== 1) throw new ClientIdTaken(`client id ${token.clientId} belongs to another account`);
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
