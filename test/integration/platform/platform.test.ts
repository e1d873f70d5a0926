import { request as httpRequest, type Server } from 'node:http';
import { crc32, gzipSync } from 'node:zlib';
import { createConnection, createServer as createNetServer, type AddressInfo } from 'node:net';
import { BODY_MIN_RATE } from '../../../src/read-body';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { createPool } from '../../../src/store/db';
import { createLogger } from '../../../src/logger';
import { createPlatformServer } from '../../../src/platform/app';
import { PLATFORM_OPENAPI } from '../../../src/platform/openapi';
import Ajv2020 from 'ajv/dist/2020';
import { hashPassword } from '../../../src/domain/platform';
import { grantPlatformAccount, insertPlatformAccount, insertPlatformInstall, insertPlatformSite, insertPlatformUser } from '../../../src/store/platform';
import { testConfig, uniqueId } from '../../support/config';
import { json, postStreamed } from '../../support/factories';
import { lockWaiters } from '../../support/lock-waiters';

let db: Pool;
let server: Server;
let url: string;
let accountId: string;
let otherAccountId: string;
const username = uniqueId('platform-user-');
const password = 'correct horse battery staple';
const auth = { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` };

beforeAll(async () => {
  db = createPool(testConfig().DATABASE_URL, 4);
  server = createPlatformServer({ db, logger: createLogger({ level: 'silent' }) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await insertPlatformUser(db, username, await hashPassword(password));
  accountId = (await insertPlatformAccount(db, 'mine')).id;
  otherAccountId = (await insertPlatformAccount(db, 'theirs')).id;
  await grantPlatformAccount(db, username, accountId);
});
afterAll(async () => {
  server.close();
  await db.end();
});

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method,
    headers: { ...auth, ...(body !== undefined && !(body instanceof Uint8Array) ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body),
  });

describe('platform API: authentication and errors', () => {
  test('missing, wrong and unknown Basic credentials: 401 in the platform envelope', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: `Basic ${Buffer.from(`${username}:wrong`).toString('base64')}` }, { authorization: `Basic ${Buffer.from('nobody:x').toString('base64')}` }]) {
      const response = await fetch(`${url}/v1/sites`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="platform"/);
      const body = await json(response);
      expect(body.message).toEqual(expect.any(String));
      expect(body.errors[0]).toMatchObject({ resource: 'authentication', type: 'access_error' });
    }
  });

  test('passwords are stored scrypt-hashed', async () => {
    const { rows } = await db.query('SELECT password_hash FROM platform_users WHERE username = $1', [username]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(rows[0].password_hash).not.toContain(password);
  });

  test('unknown route: 404 with errors[]', async () => {
    const response = await call('GET', '/v1/nothing');
    expect(response.status).toBe(404);
    expect((await json(response)).errors[0].resource).toBe('route');
  });

  test('the OpenAPI document is public and documents every platform path', async () => {
    const response = await fetch(`${url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    const document = await json(response);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0');
    expect(Object.keys(document.paths)).toEqual(Object.keys(PLATFORM_OPENAPI.paths));
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/v1/sites', '/v1/sites/{site_id}', '/v1/accounts/{account}/apps/{app}/environments/{environment}:clearCache']));
  });
});

describe('GET /v1/sites', () => {
  let siteIds: string[];
  beforeAll(async () => {
    siteIds = [];
    for (let i = 0; i < 5; i++) siteIds.push((await insertPlatformSite(db, { accountId, name: `site ${i}`, tags: i === 0 ? ['a', 'b'] : [] })).id);
    await insertPlatformInstall(db, { siteId: siteIds[0]!, name: 'prod0', environment: 'production', cname: 'prod0.example.net', phpVersion: '8.2', isMultisite: false });
    await insertPlatformSite(db, { accountId: otherAccountId, name: 'not mine' });
  });

  test('pages with previous/next paths and the total count', async () => {
    const first = await json(await call('GET', `/v1/sites?limit=2&account_id=${accountId}`));
    expect(first.count).toBe(5);
    expect(first.previous).toBeNull();
    expect(first.next).toBe(`/v1/sites?limit=2&offset=2&account_id=${accountId}`);
    expect(first.results.map((s: { id: string }) => s.id)).toEqual(siteIds.slice(0, 2));
    const second = await json(await call('GET', first.next));
    expect(second.previous).toBe(`/v1/sites?limit=2&offset=0&account_id=${accountId}`);
    const last = await json(await call('GET', `/v1/sites?limit=2&offset=4&account_id=${accountId}`));
    expect(last.next).toBeNull();
    expect(last.results).toHaveLength(1);
    // A uuid is a uuid in either case.
    const upper = await call('GET', `/v1/sites?limit=2&account_id=${accountId.toUpperCase()}`);
    expect(upper.status).toBe(200);
    expect((await json(upper)).count).toBe(5);
  });

  test('platform site fields, installs included', async () => {
    const site = await json(await call('GET', `/v1/sites/${siteIds[0]}`));
    expect(site).toEqual({
      id: siteIds[0],
      name: 'site 0',
      account: { id: accountId },
      group_name: null,
      tags: ['a', 'b'],
      created_at: expect.any(String),
      sandbox: false,
      transferable: false,
      installs: [{ id: expect.any(String), name: 'prod0', environment: 'production', cname: 'prod0.example.net', php_version: '8.2', is_multisite: false }],
    });
  });

  test("without account_id: only the user's accounts", async () => {
    const all = await json(await call('GET', '/v1/sites?limit=100'));
    expect(all.results.every((s: { account: { id: string } }) => s.account.id === accountId)).toBe(true);
  });

  test('another account: 403 on the list, 404 on the site; bad parameters: 400', async () => {
    expect((await call('GET', `/v1/sites?account_id=${otherAccountId}`)).status).toBe(403);
    const { rows } = await db.query('SELECT id FROM platform_sites WHERE account_id = $1', [otherAccountId]);
    expect((await call('GET', `/v1/sites/${rows[0].id}`)).status).toBe(404);
    const bad = await call('GET', '/v1/sites/not-a-uuid');
    expect(bad.status).toBe(400);
    expect((await json(bad)).errors[0]).toMatchObject({ resource: 'site', field: 'site_id', type: 'invalid_value' });
    expect((await json(await call('GET', '/v1/accounts/xyz/apps'))).errors[0]).toMatchObject({ resource: 'account', field: 'account', type: 'invalid_value' });
    expect((await call('GET', '/v1/sites?limit=0')).status).toBe(400);
    expect((await call('GET', '/v1/sites?limit=101')).status).toBe(400);
    expect((await call('GET', '/v1/sites?offset=-1')).status).toBe(400);
    // An offset past every row is an empty page.
    const far = await call('GET', '/v1/sites?offset=1000000000');
    expect(far.status).toBe(200);
    expect((await json(far)).results).toEqual([]);
    expect((await call('GET', '/v1/sites?account_id=x')).status).toBe(400);
  });

  test('a compressed body: 415 naming Content-Encoding', async () => {
    const response = await call('POST', `/v1/accounts/${accountId}/apps`, gzipSync(JSON.stringify({ name: 'zipped' })), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(response.status).toBe(415);
    expect((await json(response)).errors[0]).toMatchObject({ resource: 'request', field: 'Content-Encoding', type: 'invalid_value' });
  });

  test('query errors name the parameter, an unknown one included', async () => {
    expect((await json(await call('GET', '/v1/sites?limit=abc'))).errors[0]).toMatchObject({ resource: 'site', field: 'limit', type: 'invalid_value' });
    expect((await json(await call('GET', '/v1/sites?sort=name'))).errors[0]).toMatchObject({ resource: 'site', field: 'sort', type: 'invalid_value' });
  });

  test('a known path with another method: 405 with Allow, open paths before credentials', async () => {
    const sites = await call('DELETE', '/v1/sites');
    expect(sites.status).toBe(405);
    expect(sites.headers.get('allow')).toBe('HEAD, GET');
    const apps = await call('PUT', `/v1/accounts/${accountId}/apps`);
    expect(apps.status).toBe(405);
    expect(apps.headers.get('allow')).toBe('HEAD, GET, POST');
    for (const path of ['/v1/openapi.json', '/healthz']) {
      const open = await fetch(`${url}${path}`, { method: 'POST' });
      expect(open.status).toBe(405);
      expect(open.headers.get('allow')).toBe('HEAD, GET');
      expect((await json(open)).message).toBe('Method Not Allowed');
    }
    expect((await call('POST', '/v1/no-such-thing')).status).toBe(404);
  });
});

describe('headless applications', () => {
  test('apps, environments, cache, zip upload, builds, domain mappings', async () => {
    const apps = `/v1/accounts/${accountId}/apps`;
    const created = await call('POST', apps, { name: 'storefront', repository: 'https://git.example.com/shop.git' });
    expect(created.status).toBe(201);
    const app = await json(created);
    expect(app).toMatchObject({ name: 'storefront', account: { id: accountId } });
    expect((await call('POST', apps, { name: 'storefront' })).status).toBe(409);
    expect((await call('POST', apps, { name: 'x', colour: 'red' })).status).toBe(400);
    // Consoles show the repository as a link: a script URL is refused.
    expect((await json(await call('POST', apps, { name: 'x', repository: 'javascript:alert(document.cookie)' }))).errors[0]).toMatchObject({ field: 'repository', type: 'invalid_value' });
    // A required member that is not there: missing_value naming it.
    expect((await json(await call('POST', apps, {}))).errors[0]).toMatchObject({ resource: 'app', field: 'name', type: 'missing_value' });
    // A body streamed without Content-Length past the 1 MiB limit: the client reads the 413.
    const streamed = await postStreamed(`${url}${apps}`, { ...auth, 'content-type': 'application/json' }, 2 * 1024 * 1024);
    expect(streamed.status).toBe(413);
    expect((await json(await call('GET', apps))).results.map((a: { id: string }) => a.id)).toContain(app.id);
    expect((await call('GET', `/v1/accounts/${otherAccountId}/apps`)).status).toBe(403);
    // The same account in upper case is the same account.
    const upper = `/v1/accounts/${accountId.toUpperCase()}/apps`;
    expect((await json(await call('GET', upper))).results.map((a: { id: string }) => a.id)).toContain(app.id);
    expect((await call('GET', `${upper}/${app.id.toUpperCase()}`)).status).toBe(200);

    const envs = `${apps}/${app.id}/environments`;
    const env = await json(await call('POST', envs, { name: 'production', branch: 'main', variables: { API_URL: 'https://api' } }));
    expect(env).toMatchObject({ name: 'production', branch: 'main', variables: { API_URL: 'https://api' }, cache_cleared_at: null });
    expect((await call('POST', envs, { name: 'Not A Slug' })).status).toBe(400);
    const patched = await json(await call('PATCH', `${envs}/${env.id}`, { branch: null }));
    expect(patched).toMatchObject({ branch: null, variables: { API_URL: 'https://api' } });
    const cleared = await call('POST', `${envs}/${env.id}:clearCache`);
    expect(cleared.status).toBe(202);
    expect((await json(cleared)).cache_cleared_at).toEqual(expect.any(String));
    expect((await call('POST', `${envs}/${env.id}:explode`)).status).toBe(404);

    // An empty zip archive is the end-of-central-directory record alone.
    const zip = new Uint8Array(Buffer.concat([Buffer.from('504b0506', 'hex'), Buffer.alloc(18)]));
    const upload = await call('POST', `/fu${envs}/${env.id}:upload`, zip, { 'content-type': 'application/zip' });
    expect(upload.status).toBe(201);
    const uploaded = await json(upload);
    expect(uploaded.upload.size_bytes).toBe(22);
    expect(uploaded.build.status).toBe('queued');
    expect((await call('POST', `/fu${envs}/${env.id}:upload`, new Uint8Array(Buffer.from('not a zip')), { 'content-type': 'application/zip' })).status).toBe(400);

    const builds = await json(await call('GET', `${envs}/${env.id}/builds`));
    expect(builds.results.map((b: { id: string }) => b.id)).toEqual([uploaded.build.id]);
    expect((await json(await call('GET', `${envs}/${env.id}/builds/${uploaded.build.id}`))).upload_id).toBe(uploaded.upload.id);
    const cancelled = await json(await call('POST', `${envs}/${env.id}/builds/${uploaded.build.id}:cancel`));
    expect(cancelled.status).toBe('cancelled');
    expect((await call('POST', `${envs}/${env.id}/builds/${uploaded.build.id}:cancel`)).status).toBe(409);

    const mappings = `${envs}/${env.id}/domainMappings`;
    const replaced = await json(await call('POST', `${mappings}:replace`, { domains: ['shop.example.com', 'www.example.com'] }));
    expect(replaced.results.map((m: { domain: string }) => m.domain)).toEqual(['shop.example.com', 'www.example.com']);
    expect(replaced.results[0].txt_record.name).toBe('_platform-verify.shop.example.com');
    const primary = await json(await call('POST', `${mappings}/www.example.com:markPrimary`));
    expect(primary.is_primary).toBe(true);
    await call('POST', `${mappings}/shop.example.com:markPrimary`);
    const listed = await json(await call('GET', mappings));
    expect(listed.results.filter((m: { is_primary: boolean }) => m.is_primary).map((m: { domain: string }) => m.domain)).toEqual(['shop.example.com']);
    // No such TXT record is published for example.com: verification fails, and says when it checked.
    const verified = await json(await call('POST', `${mappings}/shop.example.com:verifyTxtRecord`));
    expect(verified).toMatchObject({ verification_status: 'failed', checked_at: expect.any(String) });
    expect((await call('POST', `${mappings}/nope.example.com:revalidate`)).status).toBe(404);
    await call('POST', `${mappings}:replace`, { domains: ['www.example.com'] });
    expect((await json(await call('GET', mappings))).results.map((m: { domain: string }) => m.domain)).toEqual(['www.example.com']);

    expect((await call('DELETE', `${envs}/${env.id}`)).status).toBe(204);
    expect((await call('GET', `${envs}/${env.id}`)).status).toBe(404);
    expect((await call('DELETE', `${apps}/${app.id}`)).status).toBe(204);
    expect((await call('GET', `${apps}/${app.id}`)).status).toBe(404);
  });
});

describe('admin CLI', () => {
  test('platform-user create makes Basic credentials that work', async () => {
    const name = uniqueId('cli-user-');
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', 'platform-user', 'create', '--username', name, '--password', 'another long password'], {
      env: { ...process.env, DATABASE_URL: testConfig().DATABASE_URL },
    });
    expect(JSON.parse(stdout)).toMatchObject({ username: name });
    const response = await fetch(`${url}/v1/sites`, { headers: { authorization: `Basic ${Buffer.from(`${name}:another long password`).toString('base64')}` } });
    expect(response.status).toBe(200);
    expect((await json(response)).count).toBe(0);
  });

  test('platform-user grant names what is wrong: unknown user, unknown or malformed account', async () => {
    const admin = (...args: string[]) =>
      promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', ...args], { env: { ...process.env, DATABASE_URL: testConfig().DATABASE_URL } }).then(
        ({ stdout }) => ({ ok: true, out: stdout }),
        // npx may warn on stderr first; the admin's own message is the last line.
        (error: { stderr: string }) => ({ ok: false, out: `${error.stderr.trim().split('\n').at(-1)}\n` }),
      );
    const missingAccount = '00000000-0000-4000-8000-000000000000';
    expect(await admin('platform-user', 'grant', '--username', uniqueId('nobody-'), '--account', accountId)).toEqual({ ok: false, out: expect.stringMatching(/no platform user named nobody-/) });
    expect(await admin('platform-user', 'grant', '--username', username, '--account', missingAccount)).toEqual({ ok: false, out: `admin: no platform account with id ${missingAccount}\n` });
    expect(await admin('platform-user', 'grant', '--username', username, '--account', 'not-a-uuid')).toEqual({ ok: false, out: 'admin: --account must be a UUID\n' });
    const again = await admin('platform-user', 'grant', '--username', username, '--account', accountId);
    expect(JSON.parse(again.out)).toEqual({ username, account_id: accountId, already_granted: true });
    const site = await admin('platform-site', 'create', '--account', missingAccount, '--name', 'x');
    expect(site).toEqual({ ok: false, out: `admin: no platform account with id ${missingAccount}\n` });
  });
});

describe('headless applications: an environment deleted while a request works on it', () => {
  /**
   * Deterministic race: the test holds the environment's row lock, so the request finds the
   * environment, then blocks in its UPDATE; the test deletes the row and commits; the
   * UPDATE then matches nothing. The answer must be 404, as if it had been absent.
   */
  async function raceWithDelete(request: (envPath: string) => Promise<Response>): Promise<Response> {
    const apps = `/v1/accounts/${accountId}/apps`;
    const app = await json(await call('POST', apps, { name: uniqueId('race-').toLowerCase().replace(/[^a-z0-9-]/g, '') }));
    const envs = `${apps}/${app.id}/environments`;
    const env = await json(await call('POST', envs, { name: 'staging' }));
    const locker = await db.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM platform_environments WHERE id = $1 FOR UPDATE', [env.id]);
      const pending = request(`${envs}/${env.id}`);
      // Wait until the request's UPDATE is queued behind our lock.
      await lockWaiters(db, 'UPDATE platform_environments%');
      await locker.query('DELETE FROM platform_environments WHERE id = $1', [env.id]);
      await locker.query('COMMIT');
      return await pending;
    } finally {
      locker.release();
    }
  }

  test('PATCH: 404 in the platform envelope, not 500', async () => {
    const response = await raceWithDelete((path) => call('PATCH', path, { branch: 'next' }));
    expect(response.status).toBe(404);
    expect((await json(response)).errors[0]).toMatchObject({ resource: 'environment', type: 'value_unavailable' });
  });

  test(':clearCache: 404 in the platform envelope, not 500', async () => {
    const response = await raceWithDelete((path) => call('POST', `${path}:clearCache`));
    expect(response.status).toBe(404);
    expect((await json(response)).errors[0]).toMatchObject({ resource: 'environment', type: 'value_unavailable' });
  });
});

test('a flood of requests is refused with 429 and Retry-After in the platform envelope, before any password check', async () => {
  const limited = createPlatformServer({ db, logger: createLogger({ level: 'silent' }) }, { perSecond: 0.01, burst: 2 });
  await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
  try {
    const base = `http://127.0.0.1:${(limited.address() as AddressInfo).port}`;
    // Each guess is a different password, so a different header: the user's bucket still drains.
    const guess = (password: string) => ({ authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` });
    expect((await fetch(`${base}/v1/sites`, { headers: guess('wrong-1') })).status).toBe(401);
    expect((await fetch(`${base}/v1/sites`, { headers: guess('wrong-2') })).status).toBe(401);
    const refused = await fetch(`${base}/v1/sites`, { headers: guess('wrong-3') });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await json(refused)).toMatchObject({ message: 'Too Many Requests', errors: [{ resource: 'request' }] });
    // The right password for that user, from that address, waits as well.
    expect((await fetch(`${base}/v1/sites`, { headers: auth })).status).toBe(429);
  } finally {
    await new Promise<void>((resolve) => limited.close(() => resolve()));
  }
});

test('Postgres not answering (pool connect timeout): 503 with Retry-After, not 500', async () => {
  // A listener that accepts connections and never speaks: pg's connect times out.
  const silent = createNetServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const stalled = new Pool({ connectionString: `postgres://x:y@127.0.0.1:${(silent.address() as AddressInfo).port}/x`, connectionTimeoutMillis: 300 });
  stalled.on('error', () => undefined);
  const app = createPlatformServer({ db: stalled, logger: createLogger({ level: 'silent' }) });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(app.address() as AddressInfo).port}/v1/sites`, { headers: auth });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
  } finally {
    app.close();
    silent.close();
    await stalled.end().catch(() => undefined);
  }
});

/** A new app with one environment: the environment's path. */
async function newEnvironment(): Promise<{ envPath: string; envId: string }> {
  const apps = `/v1/accounts/${accountId}/apps`;
  const app = await json(await call('POST', apps, { name: uniqueId('app-') }));
  const env = await json(await call('POST', `${apps}/${app.id}/environments`, { name: 'production' }));
  return { envPath: `${apps}/${app.id}/environments/${env.id}`, envId: env.id };
}


describe('domain mappings: concurrent writes', () => {
  const primaries = async (envId: string) =>
    (await db.query('SELECT domain FROM platform_domain_mappings WHERE environment_id = $1 AND is_primary', [envId])).rows.map((r) => r.domain);

  test('concurrent markPrimary calls for different domains: every call 200, one primary (the last to commit)', async () => {
    const { envPath, envId } = await newEnvironment();
    const mappings = `${envPath}/domainMappings`;
    await call('POST', `${mappings}:replace`, { domains: ['a.example.com', 'b.example.com', 'c.example.com'] });
    expect((await call('POST', `${mappings}/a.example.com:markPrimary`)).status).toBe(200);
    // Deterministic interleaving: holding the primary's row makes both calls start before
    // either has written. Unserialized, both then clear a.example.com, and the second to set
    // its own domain hits the one-primary index (409).
    const locker = await db.connect();
    let calls: Array<Promise<Response>>;
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM platform_domain_mappings WHERE environment_id = $1 AND domain = 'a.example.com' FOR UPDATE`, [envId]);
      calls = ['b.example.com', 'c.example.com'].map((domain) => call('POST', `${mappings}/${domain}:markPrimary`));
      await lockWaiters(db, '%platform_%', 2);
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    const answers = await Promise.all(calls);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const bodies = await Promise.all(answers.map((r) => json(r)));
    expect(bodies.every((b) => b.is_primary)).toBe(true);
    const [primary, ...others] = await primaries(envId);
    expect(others).toEqual([]);
    expect(['b.example.com', 'c.example.com']).toContain(primary);

    // And a burst without help: every call answers 200, one primary remains.
    const burst = await Promise.all(['a', 'b', 'c', 'a', 'b', 'c'].map((d) => call('POST', `${mappings}/${d}.example.com:markPrimary`)));
    expect(burst.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await primaries(envId)).toHaveLength(1);
  });

  test('concurrent replaces of the same domains in opposite orders: every call 200, never a deadlock', async () => {
    const { envPath, envId } = await newEnvironment();
    const mappings = `${envPath}/domainMappings`;
    const domains = Array.from({ length: 20 }, (_, i) => `d${i}.example.com`);
    for (let round = 0; round < 8; round++) {
      await call('POST', `${mappings}:replace`, { domains: [] });
      const answers = await Promise.all([domains, [...domains].reverse()].map((list) => call('POST', `${mappings}:replace`, { domains: list })));
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
    }
    const stored = (await db.query('SELECT domain FROM platform_domain_mappings WHERE environment_id = $1', [envId])).rows.map((r) => r.domain);
    expect(stored.sort()).toEqual([...domains].sort());
  });

  test('markPrimary for a domain a replace removes meanwhile: 404, and the old primary stays primary', async () => {
    const { envPath, envId } = await newEnvironment();
    const mappings = `${envPath}/domainMappings`;
    await call('POST', `${mappings}:replace`, { domains: ['old.example.com', 'gone.example.com'] });
    await call('POST', `${mappings}/old.example.com:markPrimary`);
    // The test holds the target's row: the call clears the old primary, then blocks setting
    // its own; the test removes the target (as a replace does) and commits.
    const locker = await db.connect();
    let pending: Promise<Response>;
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM platform_domain_mappings WHERE environment_id = $1 AND domain = 'gone.example.com' FOR UPDATE`, [envId]);
      pending = call('POST', `${mappings}/gone.example.com:markPrimary`);
      await lockWaiters(db, 'UPDATE platform_domain_mappings SET is_primary = true%', 1);
      await locker.query(`DELETE FROM platform_domain_mappings WHERE environment_id = $1 AND domain = 'gone.example.com'`, [envId]);
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    const response = await pending;
    expect(response.status).toBe(404);
    expect((await json(response)).errors[0]).toMatchObject({ resource: 'domain_mapping', type: 'value_unavailable' });
    expect(await primaries(envId)).toEqual(['old.example.com']);
  });
});

/** A zip archive holding one stored (uncompressed) file, and an optional archive comment. */
function storedZip(name: string, content: Buffer, comment = ''): Buffer {
  const fileName = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc32(content), 14);
  local.writeUInt32LE(content.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc32(content), 16);
  central.writeUInt32LE(content.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  const directoryAt = local.length + fileName.length + content.length;
  return Buffer.concat([local, fileName, content, central, fileName, endOfDirectory({ entries: 1, size: central.length + fileName.length, offset: directoryAt, comment })]);
}
function endOfDirectory({ entries = 0, size = 0, offset = 0, comment = '', commentLength = Buffer.byteLength(comment) }): Buffer {
  const record = Buffer.alloc(22);
  record.writeUInt32LE(0x06054b50, 0);
  record.writeUInt16LE(entries, 8);
  record.writeUInt16LE(entries, 10);
  record.writeUInt32LE(size, 12);
  record.writeUInt32LE(offset, 16);
  record.writeUInt16LE(commentLength, 20);
  return Buffer.concat([record, Buffer.from(comment)]);
}

describe('zip uploads', () => {
  const upload = (envPath: string, archive: Buffer) => call('POST', `/fu${envPath}:upload`, new Uint8Array(archive), { 'content-type': 'application/zip' });

  test('only an archive ending in a well-formed end-of-central-directory record is taken', async () => {
    const { envPath } = await newEnvironment();
    const real = storedZip('index.html', Buffer.from('<h1>hello</h1>\n'));
    const notZips = {
      'local header signature alone': Buffer.from('504b0304', 'hex'),
      'local header signature and junk': Buffer.concat([Buffer.from('504b0304', 'hex'), Buffer.from('junk')]),
      'end record signature and text': Buffer.concat([Buffer.from('504b0506', 'hex'), Buffer.from('this is not a zip')]),
      'a real archive cut short': real.subarray(0, real.length - 1),
      'a real archive with bytes after it': Buffer.concat([real, Buffer.from('x')]),
      'a comment length past the end': endOfDirectory({ commentLength: 5 }),
      'a central directory past the record': endOfDirectory({ entries: 1, size: 46, offset: 0 }),
      'empty body': Buffer.alloc(0),
    };
    for (const [what, archive] of Object.entries(notZips)) {
      const response = await upload(envPath, archive);
      expect({ what, status: response.status }).toEqual({ what, status: 400 });
      expect((await json(response)).errors[0]).toMatchObject({ resource: 'upload', field: 'body', type: 'invalid_value' });
    }
    const zips = {
      'an empty archive': endOfDirectory({}),
      'an empty archive with a comment': endOfDirectory({ comment: 'made by hand' }),
      'one stored file': real,
      'a comment that holds an end record signature': storedZip('a.txt', Buffer.from('a'), 'PK\u0005\u0006 in the comment'),
    };
    for (const [what, archive] of Object.entries(zips)) {
      const response = await upload(envPath, archive);
      expect({ what, status: response.status }).toEqual({ what, status: 201 });
      expect((await json(response)).upload.size_bytes).toBe(archive.length);
    }
  });

  /**
   * An upload that has passed everything up to the body read (the server sent 100 Continue):
   * `finish` sends the body, `abort` drops it (so a failed test leaves no request open).
   */
  function startUpload(path: string, length: number): Promise<{ finish(body: Buffer): Promise<number>; abort(): void }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${url}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/zip', 'content-length': String(length), expect: '100-continue' } });
      let continued = false;
      const status = new Promise<number>((done) =>
        req.on('response', (response) => {
          response.resume();
          if (!continued) reject(new Error(`answered ${response.statusCode} before 100 Continue`));
          done(response.statusCode!);
        }),
      );
      req.on('error', reject);
      req.on('continue', () => {
        continued = true;
        resolve({ finish: (body) => (req.end(body), status), abort: () => req.destroy() });
      });
      req.flushHeaders();
    });
  }

  test('uploads count by the bytes they hold: ones that have sent nothing yet (a client dripping its body) block nobody', async () => {
    const { envPath } = await newEnvironment();
    const archive = endOfDirectory({});
    // Two uploads declaring the largest size, their bodies not sent.
    const waiting = [await startUpload(`/fu${envPath}:upload`, 100 * 1024 * 1024), await startUpload(`/fu${envPath}:upload`, 100 * 1024 * 1024)];
    try {
      expect((await upload(envPath, archive)).status).toBe(201);
    } finally {
      waiting.forEach((u) => u.abort());
    }
  });
});

describe('405 Method Not Allowed', () => {
  test('every documented path called with another method: 405 with Allow; no verb where one is required: 404', async () => {
    const { envPath } = await newEnvironment();
    const build = '00000000-0000-4000-8000-000000000000';
    const cases: Array<[string, string, string]> = [
      ['POST', envPath, 'HEAD, GET, PATCH, DELETE'],
      ['PUT', envPath, 'HEAD, GET, PATCH, DELETE'],
      ['GET', `${envPath}:clearCache`, 'POST'],
      ['DELETE', `${envPath}:clearCache`, 'POST'],
      ['POST', `${envPath}/builds`, 'HEAD, GET'],
      ['POST', `${envPath}/builds/${build}`, 'HEAD, GET'],
      ['GET', `${envPath}/builds/${build}:cancel`, 'POST'],
      ['POST', `${envPath}/domainMappings`, 'HEAD, GET'],
      ['GET', `${envPath}/domainMappings:replace`, 'POST'],
      ['GET', `${envPath}/domainMappings/www.example.com:markPrimary`, 'POST'],
      ['GET', `/fu${envPath}:upload`, 'POST'],
      // As the routers match: percent-encoded ':', a trailing '/', any case.
      ['GET', `${envPath}%3AclearCache`, 'POST'],
      ['POST', `${envPath}/`, 'HEAD, GET, PATCH, DELETE'],
      ['POST', `${envPath}/BUILDS`, 'HEAD, GET'],
    ];
    for (const [method, path, allow] of cases) {
      const response = await call(method, path);
      expect({ method, path, status: response.status, allow: response.headers.get('allow') }).toEqual({ method, path, status: 405, allow });
      expect((await json(response)).message).toBe('Method Not Allowed');
    }
    for (const path of [`${envPath}/domainMappings/www.example.com`, `/fu${envPath}`, `${envPath}:explode`]) {
      const response = await call('POST', path);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect((await json(response)).errors[0].resource).toBe('route');
    }
  });

  test('every documented operation is routed (no 405, no unknown-route 404)', async () => {
    const ids: Record<string, string> = { account: accountId, domain: 'www.example.com' };
    for (const [template, operations] of Object.entries(PLATFORM_OPENAPI.paths)) {
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? '00000000-0000-4000-8000-000000000000');
      for (const method of Object.keys(operations)) {
        const response = await call(method.toUpperCase(), path);
        const resource = response.status === 204 ? undefined : (await json(response)).errors?.[0]?.resource;
        expect({ method, template, routed: response.status !== 405 && resource !== 'route' }).toEqual({ method, template, routed: true });
      }
    }
  });
});

test('a JSON body that stalls is refused with 408 after one rate window, in the platform error shape', async () => {
  const port = Number(new URL(url).port);
  const started = Date.now();
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = createConnection(port, '127.0.0.1', () =>
      socket.write(`POST /v1/accounts/${accountId}/apps HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`),
    );
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ message: 'Request Timeout', errors: [{ resource: 'request', type: 'invalid_value' }] });
  expect(Date.now() - started).toBeLessThan(2 * BODY_MIN_RATE.windowMs);
}, 40_000);

describe('the OpenAPI document', () => {
  /** Checks an answer against the schema the document declares for its operation and status. */
  const conformance = () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ ...PLATFORM_OPENAPI, $id: 'openapi.json' });
    const document = PLATFORM_OPENAPI as unknown as { paths: Record<string, Record<string, { responses: Record<string, any>; requestBody?: any }>>; components: { responses: Record<string, any> } };
    const absolute = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'));
    return {
      async check(template: string, method: string, response: Response) {
        const declared = document.paths[template]![method]!.responses[String(response.status)];
        expect({ template, method, status: response.status, declared: declared !== undefined }).toEqual({ template, method, status: response.status, declared: true });
        const resolved = declared.$ref ? document.components.responses[declared.$ref.split('/').at(-1)] : declared;
        const schema = resolved.content?.['application/json']?.schema;
        if (!schema) return undefined;
        const body = await json(response);
        const validate = ajv.compile(absolute(schema));
        expect({ template, method, valid: validate(body), errors: validate.errors ?? null }).toEqual({ template, method, valid: true, errors: null });
        return body;
      },
      /** Whether the document's request schema accepts a body. */
      accepts(template: string, method: string, body: unknown) {
        const schema = document.paths[template]![method]!.requestBody.content['application/json'].schema;
        return ajv.compile(absolute(schema))(body) as boolean;
      },
    };
  };

  test('answers match the schemas it declares, success and errors, and its request schemas refuse what the server refuses', async () => {
    const { check, accepts } = conformance();
    const APPS = '/v1/accounts/{account}/apps';
    const ENV = `${APPS}/{app}/environments/{environment}`;
    const apps = `/v1/accounts/${accountId}/apps`;
    const app = await check(APPS, 'post', await call('POST', apps, { name: uniqueId('conform-'), repository: 'https://git.example.com/a.git' }));
    await check(APPS, 'get', await call('GET', apps));
    await check(`${APPS}/{app}`, 'get', await call('GET', `${apps}/${app.id}`));
    const env = await check(`${APPS}/{app}/environments`, 'post', await call('POST', `${apps}/${app.id}/environments`, { name: 'staging', variables: { A: '1' } }));
    const envPath = `${apps}/${app.id}/environments/${env.id}`;
    await check(ENV, 'patch', await call('PATCH', envPath, { branch: 'main' }));
    await check(`${ENV}:clearCache`, 'post', await call('POST', `${envPath}:clearCache`));
    const zip = new Uint8Array(Buffer.concat([Buffer.from('504b0506', 'hex'), Buffer.alloc(18)]));
    const uploaded = await check(`/fu${ENV}:upload`, 'post', await call('POST', `/fu${envPath}:upload`, zip, { 'content-type': 'application/zip' }));
    await check(`/fu${ENV}:upload`, 'post', await call('POST', `/fu${envPath}:upload`, zip, { 'content-type': 'text/plain' }));
    await check(`${ENV}/builds`, 'get', await call('GET', `${envPath}/builds`));
    await check(`${ENV}/builds/{build}`, 'get', await call('GET', `${envPath}/builds/${uploaded.build.id}`));
    await check(`${ENV}/builds/{build}:cancel`, 'post', await call('POST', `${envPath}/builds/${uploaded.build.id}:cancel`));
    await check(`${ENV}/domainMappings:replace`, 'post', await call('POST', `${envPath}/domainMappings:replace`, { domains: ['www.example.com'] }));
    await check(`${ENV}/domainMappings/{domain}:markPrimary`, 'post', await call('POST', `${envPath}/domainMappings/www.example.com:markPrimary`));
    await check(`${ENV}/domainMappings`, 'get', await call('GET', `${envPath}/domainMappings`));
    await check('/v1/sites', 'get', await call('GET', `/v1/sites?account_id=${accountId}`));
    // Errors, in the declared shape too.
    await check(`${APPS}/{app}`, 'get', await call('GET', `${apps}/00000000-0000-4000-8000-000000000000`));
    await check(ENV, 'patch', await call('PATCH', envPath));

    // What the server refuses, the document's schemas refuse.
    const refused: Array<[string, string, string, unknown]> = [
      [APPS, 'post', apps, { name: '   ' }],
      [APPS, 'post', apps, { name: 'x', repository: 'ftp://example.com/a' }],
      [APPS, 'post', apps, { name: 'x', repository: 'https://' }],
      [APPS, 'post', apps, { name: 'x', repository: `https://example.com/${'a'.repeat(2040)}` }],
      [`${APPS}/{app}/environments`, 'post', `${apps}/${app.id}/environments`, { name: 'dev', branch: '' }],
      [`${APPS}/{app}/environments`, 'post', `${apps}/${app.id}/environments`, { name: 'dev', variables: { 'my-var': 'x' } }],
      [`${APPS}/{app}/environments`, 'post', `${apps}/${app.id}/environments`, { name: 'dev', variables: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x'])) }],
      [ENV, 'patch', envPath, { variables: { A: 'x'.repeat(32 * 1024 + 1) } }],
      [`${ENV}/domainMappings:replace`, 'post', `${envPath}/domainMappings:replace`, { domains: ['WWW.Example.com'] }],
      [`${ENV}/domainMappings:replace`, 'post', `${envPath}/domainMappings:replace`, { domains: ['a.example.com', 'a.example.com'] }],
    ];
    for (const [template, method, path, body] of refused) {
      const response = await call(method.toUpperCase(), path, body);
      expect({ body, status: response.status, documentAccepts: accepts(template, method, body) }).toEqual({ body, status: 400, documentAccepts: false });
    }
  });

  test('declares the errors each operation can answer', () => {
    for (const [template, operations] of Object.entries(PLATFORM_OPENAPI.paths)) {
      for (const [method, operation] of Object.entries(operations) as Array<[string, { responses: Record<string, unknown>; requestBody?: unknown }]>) {
        const codes = Object.keys(operation.responses);
        expect({ template, method, codes }).toEqual({ template, method, codes: expect.arrayContaining(['400', '401', '403', '404', '429', '503']) });
        if (operation.requestBody) expect({ template, method, codes }).toEqual({ template, method, codes: expect.arrayContaining(['413', '415']) });
        expect(codes).not.toContain('405'); // a documented operation never answers it; the description says when it comes
      }
    }
    const paths = PLATFORM_OPENAPI.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    expect(Object.keys(paths['/v1/accounts/{account}/apps/{app}/environments']!.post!.responses)).toContain('409');
    expect(Object.keys(paths['/v1/accounts/{account}/apps']!.post!.responses)).toContain('409');
    expect(Object.keys(paths['/v1/accounts/{account}/apps/{app}/environments/{environment}/builds/{build}:cancel']!.post!.responses)).toContain('409');
    expect(PLATFORM_OPENAPI.info.description).toMatch(/405.*Allow/);
  });
});

test("headers past Node's 16 KB limit: the platform's error shape, not a bare status line", async () => {
  const response = await fetch(`${url}/v1/accounts/${accountId}/apps`, { headers: { ...auth, 'x-padding': 'a'.repeat(17_000) } });
  expect(response.status).toBe(431);
  expect(await response.json()).toEqual({ message: expect.stringMatching(/headers are too large/), documentation_url: '/v1/openapi.json', errors: [{ resource: 'request', type: 'invalid_value', message: expect.any(String) }] });
});
