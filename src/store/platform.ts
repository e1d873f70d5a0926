import type { Queryable } from './db';

/** Platform API tables: users, accounts, sites and installs. (Apps: platform-apps.ts.) */
export interface PlatformUserRow {
  id: string;
  username: string;
  password_hash: string;
}

export async function insertPlatformUser(db: Queryable, username: string, passwordHash: string): Promise<{ id: string; username: string }> {
  const { rows } = await db.query<{ id: string; username: string }>(
    'INSERT INTO platform_users (username, password_hash) VALUES ($1, $2) RETURNING id, username',
    [username, passwordHash],
  );
  return rows[0]!;
}

export async function findPlatformUser(db: Queryable, username: string): Promise<PlatformUserRow | undefined> {
  const { rows } = await db.query<PlatformUserRow>('SELECT id, username, password_hash FROM platform_users WHERE username = $1', [username]);
  return rows[0];
}

export async function platformUserAccountIds(db: Queryable, userId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>('SELECT account_id FROM platform_user_accounts WHERE user_id = $1', [userId]);
  return rows.map((r) => r.account_id);
}

/**
 * Grants a platform user an account. `granted` is false when the user already had it; an
 * unknown user or account is named, so the console says which one is wrong.
 */
export async function grantPlatformAccount(db: Queryable, username: string, accountId: string): Promise<{ granted: boolean } | { missing: 'user' | 'account' }> {
  const { rows } = await db.query<{ user_id: string | null; account_id: string | null; granted: boolean }>(
    `WITH u AS (SELECT id FROM platform_users WHERE username = $1),
          a AS (SELECT id FROM platform_accounts WHERE id = $2),
          ins AS (INSERT INTO platform_user_accounts (user_id, account_id) SELECT u.id, a.id FROM u, a ON CONFLICT DO NOTHING RETURNING 1)
     SELECT (SELECT id FROM u) AS user_id, (SELECT id FROM a) AS account_id, EXISTS (SELECT 1 FROM ins) AS granted`,
    [username, accountId],
  );
  const row = rows[0]!;
  if (!row.user_id) return { missing: 'user' };
  if (!row.account_id) return { missing: 'account' };
  return { granted: row.granted };
}

export async function insertPlatformAccount(db: Queryable, name: string): Promise<{ id: string; name: string }> {
  const { rows } = await db.query<{ id: string; name: string }>('INSERT INTO platform_accounts (name) VALUES ($1) RETURNING id, name', [name]);
  return rows[0]!;
}

export interface PlatformSiteInput {
  accountId: string;
  name: string;
  groupName?: string | null;
  tags?: string[];
  sandbox?: boolean;
  transferable?: boolean;
}

export async function insertPlatformSite(db: Queryable, site: PlatformSiteInput): Promise<{ id: string }> {
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO platform_sites (account_id, name, group_name, tags, sandbox, transferable) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
    [site.accountId, site.name, site.groupName ?? null, site.tags ?? [], site.sandbox ?? false, site.transferable ?? false],
  );
  return rows[0]!;
}

export interface PlatformInstallInput {
  siteId: string;
  name: string;
  environment?: string | null;
  cname: string;
  phpVersion?: string | null;
  isMultisite?: boolean | null;
}

export async function insertPlatformInstall(db: Queryable, install: PlatformInstallInput): Promise<{ id: string }> {
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO platform_installs (site_id, name, environment, cname, php_version, is_multisite) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
    [install.siteId, install.name, install.environment ?? null, install.cname, install.phpVersion ?? null, install.isMultisite ?? null],
  );
  return rows[0]!;
}

/** The platform site resource (spec "Platform site"), installs included. */
export interface PlatformSite {
  id: string;
  name: string;
  account: { id: string };
  group_name: string | null;
  tags: string[];
  created_at: string;
  sandbox: boolean;
  transferable: boolean;
  installs: { id: string; name: string; environment: string | null; cname: string; php_version: string | null; is_multisite: boolean | null }[];
}

const SITE_SELECT = `
  SELECT s.id, s.name, s.account_id, s.group_name, s.tags, s.created_at, s.sandbox, s.transferable,
         COALESCE((SELECT json_agg(json_build_object('id', i.id, 'name', i.name, 'environment', i.environment, 'cname', i.cname,
                                                     'php_version', i.php_version, 'is_multisite', i.is_multisite) ORDER BY i.created_at, i.id)
                     FROM platform_installs i WHERE i.site_id = s.id), '[]'::json) AS installs
    FROM platform_sites s`;

interface SiteDbRow {
  id: string;
  name: string;
  account_id: string;
  group_name: string | null;
  tags: string[];
  created_at: Date;
  sandbox: boolean;
  transferable: boolean;
  installs: PlatformSite['installs'];
}

const present = (row: SiteDbRow): PlatformSite => ({
  id: row.id,
  name: row.name,
  account: { id: row.account_id },
  group_name: row.group_name,
  tags: row.tags,
  created_at: row.created_at.toISOString(),
  sandbox: row.sandbox,
  transferable: row.transferable,
  installs: row.installs,
});

/** One page of the sites of `accountIds`, oldest first, and the total count. */
export async function listPlatformSites(db: Queryable, accountIds: string[], limit: number, offset: number): Promise<{ count: number; results: PlatformSite[] }> {
  const [{ rows: counted }, { rows }] = await Promise.all([
    db.query<{ n: string }>('SELECT count(*) AS n FROM platform_sites WHERE account_id = ANY($1::uuid[])', [accountIds]),
    db.query<SiteDbRow>(`${SITE_SELECT} WHERE s.account_id = ANY($1::uuid[]) ORDER BY s.created_at, s.id LIMIT $2 OFFSET $3`, [accountIds, limit, offset]),
  ]);
  return { count: Number(counted[0]!.n), results: rows.map(present) };
}

export async function findPlatformSite(db: Queryable, id: string): Promise<PlatformSite | undefined> {
  const { rows } = await db.query<SiteDbRow>(`${SITE_SELECT} WHERE s.id = $1`, [id]);
  return rows[0] ? present(rows[0]) : undefined;
}
