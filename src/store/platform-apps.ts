import type { Queryable } from './db';

/** Headless applications of the platform API: apps, environments, uploads, builds, domain mappings. */
export interface PlatformApp {
  id: string;
  account: { id: string };
  name: string;
  repository: string | null;
  created_at: string;
  updated_at: string;
}
export interface PlatformEnvironment {
  id: string;
  app: { id: string };
  name: string;
  branch: string | null;
  variables: Record<string, string>;
  cache_cleared_at: string | null;
  created_at: string;
  updated_at: string;
}
export interface PlatformBuild {
  id: string;
  environment: { id: string };
  upload_id: string | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  created_at: string;
  finished_at: string | null;
}
export interface PlatformDomainMapping {
  domain: string;
  is_primary: boolean;
  verification_status: 'pending' | 'verified' | 'failed';
  txt_record: { name: string; value: string };
  checked_at: string | null;
  created_at: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// ---- apps
const appOut = (r: { id: string; account_id: string; name: string; repository: string | null; created_at: Date; updated_at: Date }): PlatformApp => ({
  id: r.id, account: { id: r.account_id }, name: r.name, repository: r.repository, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
});

export async function listApps(db: Queryable, accountId: string): Promise<PlatformApp[]> {
  const { rows } = await db.query('SELECT * FROM platform_apps WHERE account_id = $1 ORDER BY created_at, id', [accountId]);
  return rows.map(appOut);
}
export async function insertApp(db: Queryable, accountId: string, name: string, repository: string | null): Promise<PlatformApp> {
  const { rows } = await db.query('INSERT INTO platform_apps (account_id, name, repository) VALUES ($1, $2, $3) RETURNING *', [accountId, name, repository]);
  return appOut(rows[0]);
}
export async function findApp(db: Queryable, accountId: string, appId: string): Promise<PlatformApp | undefined> {
  const { rows } = await db.query('SELECT * FROM platform_apps WHERE account_id = $1 AND id = $2', [accountId, appId]);
  return rows[0] ? appOut(rows[0]) : undefined;
}
export async function deleteApp(db: Queryable, accountId: string, appId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM platform_apps WHERE account_id = $1 AND id = $2', [accountId, appId]);
  return rowCount === 1;
}

// ---- environments
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const envOut = (r: any): PlatformEnvironment => ({
  id: r.id, app: { id: r.app_id }, name: r.name, branch: r.branch, variables: r.variables, cache_cleared_at: iso(r.cache_cleared_at),
  created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
});

export async function listEnvironments(db: Queryable, appId: string): Promise<PlatformEnvironment[]> {
  const { rows } = await db.query('SELECT * FROM platform_environments WHERE app_id = $1 ORDER BY created_at, id', [appId]);
  return rows.map(envOut);
}
export async function insertEnvironment(db: Queryable, appId: string, env: { name: string; branch?: string; variables?: Record<string, string> }): Promise<PlatformEnvironment> {
  const { rows } = await db.query('INSERT INTO platform_environments (app_id, name, branch, variables) VALUES ($1, $2, $3, $4) RETURNING *', [
    appId, env.name, env.branch ?? null, JSON.stringify(env.variables ?? {}),
  ]);
  return envOut(rows[0]);
}
export async function findEnvironment(db: Queryable, appId: string, envId: string): Promise<PlatformEnvironment | undefined> {
  const { rows } = await db.query('SELECT * FROM platform_environments WHERE app_id = $1 AND id = $2', [appId, envId]);
  return rows[0] ? envOut(rows[0]) : undefined;
}
/** Omitted fields are kept; `branch: null` clears; `variables` replaces the whole map. */
export async function patchEnvironment(db: Queryable, envId: string, patch: { branch?: string | null; variables?: Record<string, string> }): Promise<PlatformEnvironment | undefined> {
  const { rows } = await db.query(
    `UPDATE platform_environments SET branch = CASE WHEN $2 THEN $3 ELSE branch END, variables = COALESCE($4, variables), updated_at = now()
      WHERE id = $1 RETURNING *`,
    [envId, patch.branch !== undefined, patch.branch ?? null, patch.variables ? JSON.stringify(patch.variables) : null],
  );
  return rows[0] ? envOut(rows[0]) : undefined; // deleted meanwhile
}
export async function deleteEnvironment(db: Queryable, envId: string): Promise<void> {
  await db.query('DELETE FROM platform_environments WHERE id = $1', [envId]);
}
export async function clearEnvironmentCache(db: Queryable, envId: string): Promise<PlatformEnvironment | undefined> {
  const { rows } = await db.query('UPDATE platform_environments SET cache_cleared_at = now(), updated_at = now() WHERE id = $1 RETURNING *', [envId]);
  return rows[0] ? envOut(rows[0]) : undefined; // deleted meanwhile
}

// ---- uploads and builds
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const buildOut = (r: any): PlatformBuild => ({
  id: r.id, environment: { id: r.environment_id }, upload_id: r.upload_id, status: r.status, created_at: r.created_at.toISOString(), finished_at: iso(r.finished_at),
});

/** Stores the archive and queues a build of it, atomically (the caller passes a transaction). */
export async function insertUploadAndBuild(db: Queryable, envId: string, content: Buffer, sha256: string): Promise<{ upload: { id: string; size_bytes: number; sha256: string }; build: PlatformBuild }> {
  const upload = (await db.query<{ id: string }>('INSERT INTO platform_uploads (environment_id, size_bytes, sha256, content) VALUES ($1, $2, $3, $4) RETURNING id', [envId, content.length, sha256, content])).rows[0]!;
  const { rows } = await db.query('INSERT INTO platform_builds (environment_id, upload_id) VALUES ($1, $2) RETURNING *', [envId, upload.id]);
  return { upload: { id: upload.id, size_bytes: content.length, sha256 }, build: buildOut(rows[0]) };
}
export async function listBuilds(db: Queryable, envId: string): Promise<PlatformBuild[]> {
  const { rows } = await db.query('SELECT * FROM platform_builds WHERE environment_id = $1 ORDER BY created_at DESC, id LIMIT 100', [envId]);
  return rows.map(buildOut);
}
export async function findBuild(db: Queryable, envId: string, buildId: string): Promise<PlatformBuild | undefined> {
  const { rows } = await db.query('SELECT * FROM platform_builds WHERE environment_id = $1 AND id = $2', [envId, buildId]);
  return rows[0] ? buildOut(rows[0]) : undefined;
}
/** Cancels a queued or running build; returns undefined when it had already finished. */
export async function cancelBuild(db: Queryable, buildId: string): Promise<PlatformBuild | undefined> {
  const { rows } = await db.query(
    `UPDATE platform_builds SET status = 'cancelled', finished_at = now() WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
    [buildId],
  );
  return rows[0] ? buildOut(rows[0]) : undefined;
}

// ---- domain mappings
export const TXT_RECORD_PREFIX = '_platform-verify';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const mappingOut = (r: any): PlatformDomainMapping => ({
  domain: r.domain, is_primary: r.is_primary, verification_status: r.verification_status,
  txt_record: { name: `${TXT_RECORD_PREFIX}.${r.domain}`, value: r.txt_record }, checked_at: iso(r.checked_at), created_at: r.created_at.toISOString(),
});

export async function listDomainMappings(db: Queryable, envId: string): Promise<PlatformDomainMapping[]> {
  const { rows } = await db.query('SELECT * FROM platform_domain_mappings WHERE environment_id = $1 ORDER BY is_primary DESC, domain', [envId]);
  return rows.map(mappingOut);
}
/** Replaces the set: kept domains keep their state, new ones start pending, missing ones go. */
/**
 * Replaces the environment's domains (the caller passes a transaction). False when the
 * environment is gone. Concurrent replaces (and markPrimaryDomain) of one environment queue on
 * its row: each sees the set the previous one left, and two lists of the same domains in
 * opposite orders cannot deadlock on each other's inserts.
 */
export async function replaceDomainMappings(db: Queryable, envId: string, domains: string[], newToken: () => string): Promise<boolean> {
  const env = await db.query('SELECT 1 FROM platform_environments WHERE id = $1 FOR NO KEY UPDATE', [envId]);
  if (env.rowCount !== 1) return false;
  await db.query('DELETE FROM platform_domain_mappings WHERE environment_id = $1 AND NOT (domain = ANY($2))', [envId, domains]);
  for (const domain of domains) {
    await db.query('INSERT INTO platform_domain_mappings (environment_id, domain, txt_record) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [envId, domain, newToken()]);
  }
  return true;
}
export async function findDomainMapping(db: Queryable, envId: string, domain: string): Promise<PlatformDomainMapping | undefined> {
  const { rows } = await db.query('SELECT * FROM platform_domain_mappings WHERE environment_id = $1 AND domain = $2', [envId, domain]);
  return rows[0] ? mappingOut(rows[0]) : undefined;
}
/**
 * Makes `domain` the environment's one primary (the caller passes a transaction). Undefined when
 * the environment or the domain is gone: the caller must then roll back, or the first UPDATE
 * would leave the environment without its primary.
 */
export async function markPrimaryDomain(db: Queryable, envId: string, domain: string): Promise<PlatformDomainMapping | undefined> {
  // Concurrent calls for one environment queue on its row, so each one's UPDATEs see the primary
  // the previous one set: the last call wins and the one-primary index is never hit. (NO KEY:
  // inserts of uploads and mappings, which only key-share the row, need not wait.)
  const env = await db.query('SELECT 1 FROM platform_environments WHERE id = $1 FOR NO KEY UPDATE', [envId]);
  if (env.rowCount !== 1) return undefined;
  await db.query('UPDATE platform_domain_mappings SET is_primary = false WHERE environment_id = $1 AND is_primary AND domain <> $2', [envId, domain]);
  const { rows } = await db.query('UPDATE platform_domain_mappings SET is_primary = true WHERE environment_id = $1 AND domain = $2 RETURNING *', [envId, domain]);
  return rows[0] ? mappingOut(rows[0]) : undefined; // removed by a concurrent replace
}
export async function setDomainVerification(db: Queryable, envId: string, domain: string, status: 'pending' | 'verified' | 'failed'): Promise<PlatformDomainMapping | undefined> {
  const { rows } = await db.query(
    'UPDATE platform_domain_mappings SET verification_status = $3, checked_at = now() WHERE environment_id = $1 AND domain = $2 RETURNING *',
    [envId, domain, status],
  );
  return rows[0] ? mappingOut(rows[0]) : undefined; // deleted meanwhile
}
