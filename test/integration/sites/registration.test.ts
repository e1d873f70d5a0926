import { startApi, type TestApi } from '../../support/harness';
import { uniqueId } from '../../support/config';
import { bearer, createServiceToken, postStreamed, createSiblingProject, createTenant, json, type Tenant } from '../../support/factories';
import { decryptSiteSecret } from '../../../src/domain/site-secret';
import { setSiteStatus } from '../../../src/store/sites';
import { generateServiceToken } from '../../../src/auth/tokens';
import { hashSecret } from '../../../src/auth/api-keys';

let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
});
afterAll(() => api.close());

const register = (token: string, body: unknown) =>
  fetch(`${api.url}/v1/sites`, { method: 'POST', headers: bearer(token), body: typeof body === 'string' ? body : JSON.stringify(body) });

const siteUrl = () => `https://${uniqueId('site')}.example.com`;

/**
 * A token of another account under a client id that is already taken: issued before client ids
 * were bound to one account (issuing one now is refused), written straight to the table.
 */
async function legacyServiceToken(accountId: string, clientId: string): Promise<string> {
  const token = generateServiceToken();
  await api.deps.db.query('INSERT INTO service_tokens (id, account_id, client_id, token_hash) VALUES ($1, $2, $3, $4)', [uniqueId('stok_'), accountId, clientId, hashSecret(token)]);
  return token;
}

async function siteToken(accountId = tenant.accountId): Promise<{ token: string; clientId: string }> {
  const clientId = uniqueId('client-');
  return { token: await createServiceToken(api.deps.db, accountId, clientId), clientId };
}

describe("a site's credentials follow its registration status", () => {
  test('a revoked site: its service token is 401 everywhere; suspended: 403 until activated again', async () => {
    const { token } = await siteToken();
    const site = await json(await register(token, { site_url: siteUrl(), project_id: tenant.projectId }));
    const agents = () => fetch(`${api.url}/v1/agents?project_id=${tenant.projectId}`, { headers: bearer(token) });
    expect((await agents()).status).toBe(200);
    await setSiteStatus(api.deps.db, site.site_id, 'suspended');
    const suspended = await agents();
    expect(suspended.status).toBe(403);
    expect((await json(suspended)).error).toMatchObject({ type: 'permission_error', message: 'the site this credential speaks for is suspended' });
    await setSiteStatus(api.deps.db, site.site_id, 'active');
    expect((await agents()).status).toBe(200);
    await setSiteStatus(api.deps.db, site.site_id, 'revoked');
    const revoked = await agents();
    expect(revoked.status).toBe(401);
    expect((await json(revoked)).error.type).toBe('invalid_token');
    expect((await register(token, { site_url: siteUrl() })).status).toBe(401);
  });

  test.each(['revoked', 'suspended'] as const)('a %s site cannot be reconnected by a new client of the account: 403, no secret, the site unchanged', async (status) => {
    const first = await siteToken();
    const url = siteUrl();
    const site = await json(await register(first.token, { site_url: url, project_id: tenant.projectId }));
    await setSiteStatus(api.deps.db, site.site_id, status);
    const second = await siteToken();
    const refused = await register(second.token, { site_url: url });
    expect(refused.status).toBe(403);
    const body = await json(refused);
    expect(body.error.type).toBe('permission_error');
    expect(JSON.stringify(body)).not.toContain(site.site_hmac_secret);
    const { rows } = await api.deps.db.query('SELECT client_id, status FROM sites WHERE site_id = $1', [site.site_id]);
    expect(rows[0]).toEqual({ client_id: first.clientId, status });
    // The new client is free to register a site of its own.
    expect((await register(second.token, { site_url: siteUrl() })).status).toBe(201);
  });

  test("a site that reconnected under a new client, then revoked: its earlier client's token is refused too", async () => {
    const first = await siteToken();
    const url = siteUrl();
    const site = await json(await register(first.token, { site_url: url, project_id: tenant.projectId }));
    const second = await siteToken();
    expect(await json(await register(second.token, { site_url: url }))).toMatchObject({ site_id: site.site_id, client_id: second.clientId });
    await setSiteStatus(api.deps.db, site.site_id, 'revoked');
    for (const token of [first.token, second.token]) {
      expect((await fetch(`${api.url}/v1/agents?project_id=${tenant.projectId}`, { headers: bearer(token) })).status).toBe(401);
      expect((await register(token, { site_url: siteUrl() })).status).toBe(401);
    }
  });

  test("a client whose site reconnected under a newer client registers nothing more (it would move off the site's revocation)", async () => {
    const first = await siteToken();
    const url = siteUrl();
    const site = await json(await register(first.token, { site_url: url, project_id: tenant.projectId }));
    const second = await siteToken();
    expect((await register(second.token, { site_url: url })).status).toBe(200);
    const elsewhere = await register(first.token, { site_url: siteUrl() });
    expect(elsewhere.status).toBe(409);
    expect((await json(elsewhere)).error.message).toMatch(/reconnected under a newer client/);
    expect((await register(first.token, { site_url: url })).status).toBe(409);
    // Its credentials still follow the site it spoke for.
    await setSiteStatus(api.deps.db, site.site_id, 'revoked');
    expect((await fetch(`${api.url}/v1/agents?project_id=${tenant.projectId}`, { headers: bearer(first.token) })).status).toBe(401);
  });

  test('revoking is final: a revoked site is not activated or suspended again; a suspended one is activated', async () => {
    const { token } = await siteToken();
    const site = await json(await register(token, { site_url: siteUrl() }));
    expect(await setSiteStatus(api.deps.db, site.site_id, 'suspended')).toBe('updated');
    expect(await setSiteStatus(api.deps.db, site.site_id, 'active')).toBe('updated');
    expect(await setSiteStatus(api.deps.db, site.site_id, 'revoked')).toBe('updated');
    expect(await setSiteStatus(api.deps.db, site.site_id, 'active')).toBe('final');
    expect(await setSiteStatus(api.deps.db, site.site_id, 'suspended')).toBe('final');
    expect(await setSiteStatus(api.deps.db, site.site_id, 'revoked')).toBe('updated');
    expect(await setSiteStatus(api.deps.db, 'site_absent', 'active')).toBe('not_found');
    const { rows } = await api.deps.db.query('SELECT status FROM sites WHERE site_id = $1', [site.site_id]);
    expect(rows[0].status).toBe('revoked');
    expect((await register(token, { site_url: siteUrl() })).status).toBe(401);
  });

  test("a site's status never reaches another account's credential of the same client id", async () => {
    const other = await createTenant(api.deps.db);
    const { token, clientId } = await siteToken();
    const site = await json(await register(token, { site_url: siteUrl() }));
    const theirs = await legacyServiceToken(other.accountId, clientId);
    const agents = () => fetch(`${api.url}/v1/agents?project_id=${other.projectId}`, { headers: bearer(theirs) });
    expect((await agents()).status).toBe(200);
    await setSiteStatus(api.deps.db, site.site_id, 'suspended');
    expect((await agents()).status).toBe(200);
    await setSiteStatus(api.deps.db, site.site_id, 'revoked');
    expect((await agents()).status).toBe(200);
  });
});

describe('a client id belongs to one account', () => {
  test('two accounts asking for one new client id at the same moment: exactly one gets it', async () => {
    const other = await createTenant(api.deps.db);
    for (let round = 0; round < 10; round++) {
      const clientId = uniqueId('race-');
      const outcomes = await Promise.allSettled([createServiceToken(api.deps.db, tenant.accountId, clientId), createServiceToken(api.deps.db, other.accountId, clientId)]);
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    }
  });

  test.each([
    ['holds a service token of it', async (clientId: string) => void (await createServiceToken(api.deps.db, tenant.accountId, clientId))],
    ['registered a site with it', async (clientId: string) => void (await register(await createServiceToken(api.deps.db, tenant.accountId, clientId), { site_url: siteUrl() }))],
  ])('no service token of a client id is issued to another account once one account %s', async (_, claim) => {
    const other = await createTenant(api.deps.db);
    const clientId = uniqueId('claimed-');
    await claim(clientId);
    await expect(createServiceToken(api.deps.db, other.accountId, clientId)).rejects.toThrow(`client id ${clientId} belongs to another account`);
    // The owning account gets more.
    await expect(createServiceToken(api.deps.db, tenant.accountId, clientId)).resolves.toMatch(/^sst_/);
  });
});

describe('POST /v1/sites: registration', () => {
  test('first registration: 201 with a stable site id, the client id, active status and a 64-hex secret', async () => {
    const { token, clientId } = await siteToken();
    const response = await register(token, { site_url: siteUrl(), project_id: tenant.projectId, site_info: { wp_version: '6.5', active_plugins: ['a/a.php'], ssl_valid: true } });
    expect(response.status).toBe(201);
    const body = await json(response);
    expect(Object.keys(body).sort()).toEqual(['client_id', 'created_at', 'site_hmac_secret', 'site_id', 'status']);
    expect(body.site_id).toMatch(/^site_[0-9A-Za-z]{22}$/);
    expect(body.client_id).toBe(clientId);
    expect(body.status).toBe('active');
    expect(body.site_hmac_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  test('re-registering the same client updates in place: same site id, created_at and secret', async () => {
    const { token } = await siteToken();
    const first = await json(await register(token, { site_url: siteUrl(), display_name: 'First' }));
    await new Promise((r) => setTimeout(r, 20));
    const secondResponse = await register(token, { site_url: siteUrl(), display_name: 'Second', project_id: tenant.projectId });
    expect(secondResponse.status).toBe(200);
    const second = await json(secondResponse);
    expect(second).toEqual(first);
    const { rows } = await api.deps.db.query('SELECT display_name, project_id, created_at < updated_at AS updated FROM sites WHERE site_id = $1', [first.site_id]);
    expect(rows[0]).toEqual({ display_name: 'Second', project_id: tenant.projectId, updated: true });
  });

  test('a site reconnecting with a new client keeps its site id and secret; client_id changes', async () => {
    const url = siteUrl();
    const first = await json(await register((await siteToken()).token, { site_url: url }));
    const reconnect = await siteToken();
    const second = await json(await register(reconnect.token, { site_url: `${url.toUpperCase().replace('HTTPS', 'https')}/` }));
    expect(second.site_id).toBe(first.site_id);
    expect(second.site_hmac_secret).toBe(first.site_hmac_secret);
    expect(second.created_at).toBe(first.created_at);
    expect(second.client_id).toBe(reconnect.clientId);
    expect(second.client_id).not.toBe(first.client_id);
  });

  test('the secret is stored encrypted (AES-256-GCM under GATEWAY_SECRET), never in clear', async () => {
    const body = await json(await register((await siteToken()).token, { site_url: siteUrl() }));
    const { rows } = await api.deps.db.query('SELECT * FROM sites WHERE site_id = $1', [body.site_id]);
    expect(JSON.stringify(rows[0])).not.toContain(body.site_hmac_secret);
    expect(rows[0].hmac_secret_encrypted).toMatch(/^v1\./);
    expect(decryptSiteSecret(api.deps.config.GATEWAY_SECRET, body.site_id, rows[0].hmac_secret_encrypted)).toBe(body.site_hmac_secret);
    // Bound to its row: the ciphertext does not decrypt as another site's.
    expect(() => decryptSiteSecret(api.deps.config.GATEWAY_SECRET, 'site_' + 'x'.repeat(22), rows[0].hmac_secret_encrypted)).toThrow();
    expect(() => decryptSiteSecret('another-secret-another-secret-another-secret', body.site_id, rows[0].hmac_secret_encrypted)).toThrow();
  });

  test('display_name defaults to the site_url truncated to 255 characters', async () => {
    const long = `https://${uniqueId('h')}.example.com/${'p'.repeat(400)}`;
    const body = await json(await register((await siteToken()).token, { site_url: long }));
    const { rows } = await api.deps.db.query('SELECT display_name FROM sites WHERE site_id = $1', [body.site_id]);
    expect(rows[0].display_name).toBe(long.slice(0, 255));
  });

  test('new sites have asynchronous execution enabled and no primary collection', async () => {
    const { token, clientId } = await siteToken();
    await register(token, { site_url: siteUrl() });
    const { rows } = await api.deps.db.query('SELECT async_execution_enabled, account_id FROM sites WHERE client_id = $1', [clientId]);
    expect(rows[0]).toEqual({ async_execution_enabled: true, account_id: tenant.accountId });
  });
});

describe('POST /v1/sites: conflicts', () => {
  test('409 when another account first registered the client', async () => {
    const other = await createTenant(api.deps.db);
    const clientId = uniqueId('shared-client-');
    const mine = await createServiceToken(api.deps.db, tenant.accountId, clientId);
    const theirs = await legacyServiceToken(other.accountId, clientId);
    expect((await register(mine, { site_url: siteUrl() })).status).toBe(201);
    const response = await register(theirs, { site_url: siteUrl() });
    expect(response.status).toBe(409);
    expect((await json(response)).error.type).toBe('conflict_error');
  });

  test('409 for another account presenting a client whose site has since moved to a new client', async () => {
    const other = await createTenant(api.deps.db);
    const url = siteUrl();
    const first = uniqueId('first-client-');
    expect((await register(await createServiceToken(api.deps.db, tenant.accountId, first), { site_url: url })).status).toBe(201);
    // The site reconnects with a new client: the sites row now names that one.
    expect((await register((await siteToken()).token, { site_url: url })).status).toBe(200);
    const response = await register(await legacyServiceToken(other.accountId, first), { site_url: siteUrl() });
    expect(response.status).toBe(409);
    expect((await json(response)).error.type).toBe('conflict_error');
  });

  test('409 when a client moves to a site_url owned by another site of the account', async () => {
    const taken = siteUrl();
    await register((await siteToken()).token, { site_url: taken });
    const mover = await siteToken();
    expect((await register(mover.token, { site_url: siteUrl() })).status).toBe(201);
    const response = await register(mover.token, { site_url: taken });
    expect(response.status).toBe(409);
  });

  test('the same site_url in two accounts is two sites', async () => {
    const url = siteUrl();
    const other = await createTenant(api.deps.db);
    const a = await json(await register((await siteToken()).token, { site_url: url }));
    const b = await json(await register((await siteToken(other.accountId)).token, { site_url: url }));
    expect(a.site_id).not.toBe(b.site_id);
  });
});

describe('POST /v1/sites: validation', () => {
  let token: string;
  beforeAll(async () => (token = (await siteToken()).token));

  test.each<[string, Record<string, unknown>, string]>([
    ['unknown top-level field', { site_url: 'https://a.example.com', extra: 1 }, 'extra'],
    ['unknown site_info field', { site_url: 'https://a.example.com', site_info: { wp_version: '6', plugins: [] } }, 'plugins'],
    ['missing site_url', { display_name: 'x' }, 'site_url'],
    ['site_url without scheme', { site_url: 'example.com' }, 'site_url'],
    ['site_url without host', { site_url: 'file:///etc/passwd' }, 'site_url'],
    ['site_url over 2048 bytes', { site_url: `https://a.example.com/${'é'.repeat(1014)}` }, 'site_url'],
    // Abilities are called under {site_url}/wp-json/: nothing the URL parser would drop or move.
    ['site_url with trailing whitespace', { site_url: 'https://a.example.com/blog ' }, 'site_url: must not contain whitespace'],
    ['site_url with a query', { site_url: 'https://a.example.com/blog?lang=en' }, 'site_url: must not have a query or a fragment'],
    ['site_url with a fragment', { site_url: 'https://a.example.com/blog#top' }, 'site_url: must not have a query or a fragment'],
    ['site_url with an empty query', { site_url: 'https://a.example.com/blog?' }, 'site_url: must not have a query or a fragment'],
    ['site_url with a tab inside', { site_url: 'http://ex\tample.com/blog' }, 'site_url: must not contain whitespace'],
    ['site_url with a space in the path', { site_url: 'http://example.com/a b' }, 'site_url: must not contain whitespace'],
    ['site_url on port 0', { site_url: 'http://example.com:0/blog' }, 'site_url: must be an absolute http(s) URL'],
    ['site_url with credentials', { site_url: 'http://user:pw@a.example.com/ui' }, 'site_url: must not carry credentials'],
    ['site_url with an inferred host (no //)', { site_url: 'http:a.example.com' }, 'site_url: must be an absolute http(s) URL written scheme://host'],
    ['site_url with an inferred host (///)', { site_url: 'http:///a.example.com' }, 'site_url: must be an absolute http(s) URL written scheme://host'],
    ['display_name over 255 characters', { site_url: 'https://a.example.com', display_name: 'x'.repeat(256) }, 'display_name'],
    ['project_id over 64 characters', { site_url: 'https://a.example.com', project_id: 'p'.repeat(65) }, 'project_id'],
    ['active_plugins over 500', { site_url: 'https://a.example.com', site_info: { active_plugins: Array.from({ length: 501 }, (_, i) => `p${i}`) } }, 'site_info.active_plugins'],
    ['php_version over 64', { site_url: 'https://a.example.com', site_info: { php_version: 'x'.repeat(65) } }, 'site_info.php_version'],
    ['active_theme over 256', { site_url: 'https://a.example.com', site_info: { active_theme: 'x'.repeat(257) } }, 'site_info.active_theme'],
    ['memory_limit over 32', { site_url: 'https://a.example.com', site_info: { memory_limit: 'x'.repeat(33) } }, 'site_info.memory_limit'],
    ['server_software over 256', { site_url: 'https://a.example.com', site_info: { server_software: 'x'.repeat(257) } }, 'site_info.server_software'],
    ['non-integer active_plugin_count', { site_url: 'https://a.example.com', site_info: { active_plugin_count: 1.5 } }, 'site_info.active_plugin_count'],
    ['non-boolean wp_debug', { site_url: 'https://a.example.com', site_info: { wp_debug: 'yes' } }, 'site_info.wp_debug'],
    ...['wp_version', 'locale', 'db_version', 'timezone'].map((name): [string, Record<string, unknown>, string] => [
      `${name} over 64`,
      { site_url: 'https://a.example.com', site_info: { [name]: 'x'.repeat(65) } },
      `site_info.${name}`,
    ]),
    ['non-boolean ssl_valid', { site_url: 'https://a.example.com', site_info: { ssl_valid: 1 } }, 'site_info.ssl_valid'],
    ['non-boolean is_multisite', { site_url: 'https://a.example.com', site_info: { is_multisite: 'no' } }, 'site_info.is_multisite'],
    ['negative active_plugin_count', { site_url: 'https://a.example.com', site_info: { active_plugin_count: -1 } }, 'site_info.active_plugin_count'],
  ])('%s: 400 naming the field', async (_label, body, field) => {
    const response = await register(token, body);
    expect(response.status).toBe(400);
    const error = (await json(response)).error;
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain(field);
  });

  test('limits are inclusive: exactly 2048-byte URL, 255-char name, 64-char project id field, 500 plugins', async () => {
    const url = `https://${uniqueId('x')}.example.com/`;
    const exact = url + 'a'.repeat(2048 - url.length);
    const response = await register(token, {
      site_url: exact,
      display_name: 'é'.repeat(255),
      site_info: { active_plugins: Array.from({ length: 500 }, (_, i) => `p${i}`), active_plugin_count: 612, memory_limit: 'x'.repeat(32) },
    });
    expect(response.status).toBeLessThan(300);
  });

  test('a body over 64 KiB is refused with 413 before parsing (even when not JSON)', async () => {
    const big = '{' + ' '.repeat(64 * 1024) + '}';
    const response = await register(token, big);
    expect(response.status).toBe(413);
    expect((await json(response)).error.type).toBe('request_too_large');
    const garbage = await register(token, 'x'.repeat(64 * 1024 + 1));
    expect(garbage.status).toBe(413);
    const notJson = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'text/plain' }, body: 'x'.repeat(64 * 1024 + 1) });
    expect(notJson.status).toBe(413); // size is checked before the media type
    const head = `{"site_url":"https://${uniqueId('k')}.example.com"`;
    const exactly = head + ' '.repeat(64 * 1024 - head.length - 1) + '}';
    expect(Buffer.byteLength(exactly)).toBe(64 * 1024);
    expect((await register(token, exactly)).status).toBeLessThan(300);
  });

  test('a body streamed without Content-Length is refused with 413 once it passes 64 KiB, and the client reads it', async () => {
    const response = await postStreamed(`${api.url}/v1/sites`, bearer(token), 256 * 1024);
    expect(response.status).toBe(413);
    // The rest of the body is read and discarded on a connection kept open (see read-body.ts).
    expect(response.headers.get('connection')).toBe('keep-alive');
    expect((await json(response)).error.type).toBe('request_too_large');
  });

  test('a project of another account is refused with 403; a sibling project of the account is accepted', async () => {
    const other = await createTenant(api.deps.db);
    expect((await register(token, { site_url: siteUrl(), project_id: other.projectId })).status).toBe(403);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    expect((await register((await siteToken()).token, { site_url: siteUrl(), project_id: sibling })).status).toBe(201);
  });
});

describe('POST /v1/sites: callers', () => {
  test('API keys and identity-provider tokens are not site credentials: 403', async () => {
    const response = await register(tenant.key, { site_url: siteUrl() });
    expect(response.status).toBe(403);
    expect((await json(response)).error.type).toBe('permission_error');
  });

  test('missing or unknown token: 401 with WWW-Authenticate', async () => {
    const missing = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    const unknown = await register('sst_' + 'x'.repeat(43), { site_url: siteUrl() });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect((await register('oat_' + 'x'.repeat(43), { site_url: siteUrl() })).status).toBe(401);
  });

  test('a revoked service token: 401 at once', async () => {
    const { token, clientId } = await siteToken();
    expect((await register(token, { site_url: siteUrl() })).status).toBe(201);
    await api.deps.db.query('UPDATE service_tokens SET revoked_at = now() WHERE client_id = $1', [clientId]);
    const response = await register(token, { site_url: siteUrl() });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
  });
});
