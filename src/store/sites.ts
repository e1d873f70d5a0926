import type { Queryable } from './db';
import type { SiteStatus } from '../domain/sites';

export interface SiteRow {
  site_id: string;
  client_id: string;
  account_id: string;
  project_id: string | null;
  site_url: string;
  site_url_key: string;
  display_name: string;
  site_info: Record<string, unknown> | null;
  status: SiteStatus;
  async_execution_enabled: boolean;
  hmac_secret_encrypted: string;
  created_at: Date;
  updated_at: Date;
}

// (sites.primary_collection_id, never written, is not selected: a later release drops it, once
// no process of this one, which still selects it by name, can be running.)
const COLUMNS = `site_id, client_id, account_id, project_id, site_url, site_url_key, display_name, site_info, status,
  async_execution_enabled, hmac_secret_encrypted, created_at, updated_at`;

/**
 * Serializes registrations of one account, so the "who owns this client / this URL"
 * reads and the write that follows them cannot interleave with another registration.
 * Must run inside a transaction (the lock is released at commit).
 */
export async function lockAccountRegistrations(client: Queryable, accountId: string): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtext('sites:' || $1))`, [accountId]);
}

/**
 * Binds a site client to the account that first registered it and returns that account.
 * A concurrent first registration by another account waits on the row and then sees it.
 */
export async function bindSiteClient(db: Queryable, clientId: string, accountId: string): Promise<{ accountId: string; siteId: string | null }> {
  const { rows } = await db.query<{ account_id: string; site_id: string | null }>(
    `INSERT INTO site_clients (client_id, account_id) VALUES ($1, $2)
     ON CONFLICT (client_id) DO UPDATE SET client_id = EXCLUDED.client_id
     RETURNING account_id, site_id`,
    [clientId, accountId],
  );
  return { accountId: rows[0]!.account_id, siteId: rows[0]!.site_id };
}

/** Records that the client now speaks for this site (its credentials follow the site's status). */
export async function attachClientToSite(db: Queryable, clientId: string, siteId: string): Promise<void> {
  await db.query('UPDATE site_clients SET site_id = $2 WHERE client_id = $1', [clientId, siteId]);
}

/**
 * SQL for one column of the site a client speaks for (null when it has none), given the SQL
 * naming the credential's client id and account. Credentials of a site's earlier clients
 * follow it too. Only the client's own account's site counts: another account may hold a
 * credential of the same client id (refused at registration, 409) and no site of one
 * account may reach another's credentials or sessions. (Its aliases are its own, so any
 * query can embed it.)
 */
export const siteOfClient = (column: 'status' | 'async_execution_enabled', clientIdSql: string, accountIdSql: string): string =>
  `(SELECT site_of_client.${column} FROM site_clients client_binding JOIN sites site_of_client ON site_of_client.site_id = client_binding.site_id
     WHERE client_binding.client_id = ${clientIdSql} AND client_binding.account_id = ${accountIdSql})`;

/** The account of a project, as SQL (for siteOfClient from a session's project). */
export const accountOfProject = (projectIdSql: string): string => `(SELECT account_id FROM projects WHERE id = ${projectIdSql})`;

export async function findSiteByClientId(db: Queryable, clientId: string): Promise<SiteRow | undefined> {
  const { rows } = await db.query<SiteRow>(`SELECT ${COLUMNS} FROM sites WHERE client_id = $1`, [clientId]);
  return rows[0];
}

export async function findSiteById(db: Queryable, siteId: string): Promise<SiteRow | undefined> {
  const { rows } = await db.query<SiteRow>(`SELECT ${COLUMNS} FROM sites WHERE site_id = $1`, [siteId]);
  return rows[0];
}

export async function findSiteByUrlKey(db: Queryable, accountId: string, urlKey: string): Promise<SiteRow | undefined> {
  const { rows } = await db.query<SiteRow>(`SELECT ${COLUMNS} FROM sites WHERE account_id = $1 AND site_url_key = $2`, [accountId, urlKey]);
  return rows[0];
}

export interface SiteWrite {
  clientId: string;
  projectId: string | null;
  siteUrl: string;
  siteUrlKey: string;
  displayName: string;
  siteInfo: Record<string, unknown> | null;
}

export async function insertSite(db: Queryable, site: SiteWrite & { siteId: string; accountId: string; hmacSecretEncrypted: string }): Promise<SiteRow> {
  const { rows } = await db.query<SiteRow>(
    `INSERT INTO sites (site_id, client_id, account_id, project_id, site_url, site_url_key, display_name, site_info, hmac_secret_encrypted)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [site.siteId, site.clientId, site.accountId, site.projectId, site.siteUrl, site.siteUrlKey, site.displayName, site.siteInfo, site.hmacSecretEncrypted],
  );
  return rows[0]!;
}

/** Updates a registration in place: site_id, created_at, status and the secret never change here. */
export async function updateSite(db: Queryable, siteId: string, site: SiteWrite): Promise<SiteRow> {
  const { rows } = await db.query<SiteRow>(
    `UPDATE sites SET client_id = $2, project_id = $3, site_url = $4, site_url_key = $5, display_name = $6, site_info = $7, updated_at = now()
      WHERE site_id = $1 RETURNING ${COLUMNS}`,
    [siteId, site.clientId, site.projectId, site.siteUrl, site.siteUrlKey, site.displayName, site.siteInfo],
  );
  return rows[0]!;
}

/**
 * Sets a site's status (an operator action). Revoking is final: a revoked site keeps that
 * status (`'final'` is returned for any other change asked of it); suspending is the
 * status to lift later.
 */
export async function setSiteStatus(db: Queryable, siteId: string, status: SiteStatus): Promise<'updated' | 'not_found' | 'final'> {
  const { rows } = await db.query<{ before: SiteStatus; updated: boolean }>(
    `WITH before AS (SELECT status FROM sites WHERE site_id = $1),
          changed AS (UPDATE sites SET status = $2, updated_at = now() WHERE site_id = $1 AND (status <> 'revoked' OR $2 = 'revoked') RETURNING 1)
     SELECT (SELECT status FROM before) AS before, EXISTS (SELECT 1 FROM changed) AS updated`,
    [siteId, status],
  );
  const { before, updated } = rows[0]!;
  return updated ? 'updated' : before === null ? 'not_found' : 'final';
}

/** The per-site switch "asynchronous execution enabled" (the console's; the spec shows no API for it). */
export async function setAsyncExecution(db: Queryable, siteId: string, enabled: boolean): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE sites SET async_execution_enabled = $2, updated_at = now() WHERE site_id = $1', [siteId, enabled]);
  return rowCount === 1;
}

/** Sites of one project with one status, oldest first (MCP list_account_sites). */
export async function listProjectSites(db: Queryable, projectId: string, status: SiteStatus): Promise<SiteRow[]> {
  const { rows } = await db.query<SiteRow>(
    `SELECT ${COLUMNS} FROM sites WHERE project_id = $1 AND status = $2 ORDER BY created_at, site_id`,
    [projectId, status],
  );
  return rows;
}

/** Subjects among `siteIds` connected for `subject`: the site ids where that user connected. */
export async function connectedSiteIds(db: Queryable, subject: string, siteIds: string[]): Promise<Set<string>> {
  if (siteIds.length === 0) return new Set();
  const { rows } = await db.query<{ site_id: string }>(
    'SELECT site_id FROM site_user_connections WHERE subject = $1 AND site_id = ANY($2)',
    [subject, siteIds],
  );
  return new Set(rows.map((r) => r.site_id));
}

export async function connectSiteUser(db: Queryable, siteId: string, subject: string, cmsUser: string | null): Promise<void> {
  await db.query(
    `INSERT INTO site_user_connections (site_id, subject, cms_user) VALUES ($1, $2, $3)
     ON CONFLICT (site_id, subject) DO UPDATE SET cms_user = EXCLUDED.cms_user, connected_at = now()`,
    [siteId, subject, cmsUser],
  );
}

export async function disconnectSiteUser(db: Queryable, siteId: string, subject: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM site_user_connections WHERE site_id = $1 AND subject = $2', [siteId, subject]);
  return rowCount === 1;
}
