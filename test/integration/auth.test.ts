import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { authenticate } from '../../src/auth/middleware';
import { rateLimit } from '../../src/api/middleware/rate-limit';
import { assertCredits, chargeUsage, callerFields } from '../../src/billing/usage';
import { getBalanceNano } from '../../src/billing/credits';
import { decodeJwt, SignJWT } from 'jose';
import { devIssuerKey, signBrowserToken, signDevIdpToken } from '../../src/auth/tokens';
import { revokeApiKey } from '../../src/store/api-keys';
import type { AppContext, AppState } from '../../src/api/types';
import { startApi, type TestApi } from '../support/harness';
import { startPlatform, platformUserWithAccount } from '../support/platform';
import { request as httpRequest } from 'node:http';
import { json, bearer, createKey, createServiceToken, createTenant, type Tenant } from '../support/factories';

/**
 * Probe routes exercising the shared auth, rate-limit and metering middleware the same way
 * the product routes chain them. (The product routes have their own tests too.)
 */
function probeRouter(api: () => TestApi) {
  const router = new Router<AppState, AppContext>();
  const deps = () => api().deps;
  router.post('/v1/_probe/chat', (ctx, next) => rateLimit(deps())(ctx, next), (ctx, next) => authenticate(deps(), { scope: 'chat' })(ctx, next), async (ctx) => {
    const principal = ctx.state.principal!;
    await assertCredits(deps().db, principal.projectId!);
    await chargeUsage(deps().db, {
      ...callerFields(principal, ctx.get('x-application')),
      model: 'probe/model',
      operation: 'chat',
      input_tokens: 1,
      output_tokens: 1,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      reasoning_tokens: 0,
      credits_nano: 1_000_000_000,
      requestId: ctx.state.requestId,
    });
    ctx.body = { ok: true };
  });
  router.get('/v1/_probe/agents', (ctx, next) => authenticate(deps(), { scope: 'agents' })(ctx, next), (ctx) => {
    ctx.body = { project_id: ctx.state.principal!.projectId };
  });
  router.post('/v1/_probe/messages', (ctx, next) => authenticate(deps(), { scope: 'chat', allowXApiKey: true })(ctx, next), (ctx) => {
    ctx.body = { ok: true };
  });
  router.get('/v1/_probe/events', (ctx, next) => authenticate(deps(), { scope: 'sessions', accept: ['api_key', 'browser_session'] })(ctx, next), (ctx) => {
    ctx.body = { agent_id: ctx.state.principal!.agentId ?? null };
  });
  router.get('/v1/_probe/analytics', (ctx, next) => authenticate(deps(), { accept: ['okta'] })(ctx, next), (ctx) => {
    ctx.body = { subject: ctx.state.principal!.subject };
  });
  return router;
}

let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '60' }, { extraRouters: [probeRouter(() => api)] });
  tenant = await createTenant(api.deps.db);
});
afterAll(() => api.close());

const post = (path: string, headers: Record<string, string>, target: TestApi = api) => fetch(`${target.url}${path}`, { method: 'POST', headers, body: '{}' });

describe('API keys', () => {
  test.each([
    ['wrong prefix', 'sk_' + 'a'.repeat(43)],
    ['too short', 'svc_' + 'a'.repeat(35)],
    ['too long', 'svc_' + 'a'.repeat(97)],
    ['bad characters', 'svc_' + 'a'.repeat(40) + '+/='],
    ['unknown but well-formed', 'svc_' + 'a'.repeat(43)],
  ])('%s: 401 invalid_token with WWW-Authenticate', async (_label, key) => {
    const response = await post('/v1/_probe/chat', bearer(key));
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="gateway"/);
    expect((await json(response)).error.type).toBe('invalid_token');
  });

  test('a credential header sent twice is 400 whichever comes first (gateway and platform API)', async () => {
    const platform = await startPlatform(api.deps.db);
    const { headers: platformHeaders } = await platformUserWithAccount(api.deps.db, 'twice');
    /** Sends a GET with `name` repeated, one line per value. */
    const twice = (url: string, name: string, values: string[], method = 'GET') =>
      new Promise<{ status: number; body: any; cors?: string }>((resolve, reject) => {
        const request = httpRequest(url, { method }, (response) => {
          let body = '';
          response.on('data', (chunk) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(body), cors: response.headers['access-control-allow-origin'] }));
        });
        request.setHeader(name, values);
        request.on('error', reject);
        request.end();
      });
    try {
      const bogus = `Bearer svc_${'b'.repeat(43)}`;
      for (const values of [[`Bearer ${tenant.key}`, bogus], [bogus, `Bearer ${tenant.key}`]]) {
        const answer = await twice(`${api.url}/v1/agents`, 'authorization', values);
        expect(answer.status).toBe(400);
        expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', message: 'the authorization header was sent more than once; send one credential' });
        expect(answer.cors).toBe('*'); // a page can read this refusal too
      }
      // OAuth's token endpoint answers in OAuth's shape.
      const oauth = await twice(`${api.url}/oauth/token`, 'authorization', ['Basic eDp5', 'Basic eDp6'], 'POST');
      expect(oauth).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'the authorization header was sent more than once; send one credential' } });
      const messages = await twice(`${api.url}/v1/messages`, 'x-api-key', [tenant.key, tenant.key]);
      expect(messages).toMatchObject({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error' } } });
      const sites = await twice(`${platform.url}/v1/sites`, 'authorization', [platformHeaders.authorization!, platformHeaders.authorization!]);
      expect(sites).toMatchObject({ status: 400, body: { errors: [{ field: 'authorization' }] } });
    } finally {
      await platform.close();
    }
  });

  test('missing credential: 401 with WWW-Authenticate', async () => {
    const response = await post('/v1/_probe/chat', { 'content-type': 'application/json' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="gateway"');
  });

  test('a valid key works, and a revoked key is refused on the very next request', async () => {
    const { key, id } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
    expect((await post('/v1/_probe/chat', bearer(key))).status).toBe(200);
    await revokeApiKey(api.deps.db, id);
    const response = await post('/v1/_probe/chat', bearer(key));
    expect(response.status).toBe(401);
    expect((await json(response)).error.type).toBe('invalid_token');
  });

  test('read_only key: 403 permission_error naming the missing scope on a write route', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'read_only' });
    const response = await post('/v1/_probe/chat', bearer(key));
    expect(response.status).toBe(403);
    const body = await json(response);
    expect(body.error.type).toBe('permission_error');
    expect(body.error.message).toContain('chat:write');
    expect((await fetch(`${api.url}/v1/_probe/agents`, { headers: bearer(key) })).status).toBe(200);
  });

  test('restricted key: only the mapped scopes, at the mapped level', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'restricted', scopes: { chat: 'write', agents: 'none' } });
    expect((await post('/v1/_probe/chat', bearer(key))).status).toBe(200);
    const agents = await fetch(`${api.url}/v1/_probe/agents`, { headers: bearer(key) });
    expect(agents.status).toBe(403);
    expect((await json(agents)).error.message).toContain('agents:read');
  });

  test('x-api-key is accepted only where the route allows it (/v1/messages)', async () => {
    const headers = { 'x-api-key': tenant.key, 'content-type': 'application/json' };
    expect((await post('/v1/_probe/messages', headers)).status).toBe(200);
    expect((await post('/v1/_probe/chat', headers)).status).toBe(401);
  });

  test('the key records when it was last used', async () => {
    const { key, id } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
    await post('/v1/_probe/chat', bearer(key));
    await new Promise((r) => setTimeout(r, 100));
    const { rows } = await api.deps.db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
    expect(rows[0].last_used_at).toBeInstanceOf(Date);
  });

  test('only the SHA-256 of a key is stored; listings show a fingerprint of it, no character of the secret', async () => {
    const { rows } = await api.deps.db.query("SELECT * FROM api_keys WHERE id = $1", [tenant.keyId]);
    const secret = tenant.key.slice('svc_'.length);
    const stored = JSON.stringify(rows[0]);
    for (let i = 0; i + 6 <= secret.length; i++) expect(stored).not.toContain(secret.slice(i, i + 6));
    expect(rows[0].key_hash).toHaveLength(32);
    expect(rows[0].display_prefix).toBe(`svc_…${createHash('sha256').update(tenant.key).digest('hex').slice(0, 8)}`);
  });
});

describe('other credentials', () => {
  test('browser session token: accepted where the route allows it, bound to its agent', async () => {
    const { token } = await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: 'agent_x' });
    const ok = await fetch(`${api.url}/v1/_probe/events`, { headers: bearer(token) });
    expect(await json(ok)).toEqual({ agent_id: 'agent_x' });
    expect((await post('/v1/_probe/chat', bearer(token))).status).toBe(403);
  });

  test('expired or tampered browser token: 401', async () => {
    const { token } = await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: 'a' }, -10);
    expect((await fetch(`${api.url}/v1/_probe/events`, { headers: bearer(token) })).status).toBe(401);
    const fresh = (await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: 'a' })).token;
    const tampered = fresh.slice(0, -3) + (fresh.endsWith('aaa') ? 'bbb' : 'aaa');
    expect((await fetch(`${api.url}/v1/_probe/events`, { headers: bearer(tampered) })).status).toBe(401);
  });

  test('identity-provider token: accepted on account-level routes only', async () => {
    const token = await signDevIdpToken(api.deps.config, { subject: 'user-1', accountIds: [tenant.accountId] });
    const response = await fetch(`${api.url}/v1/_probe/analytics`, { headers: bearer(token) });
    expect(await json(response)).toEqual({ subject: 'user-1' });
    expect((await fetch(`${api.url}/v1/_probe/analytics`, { headers: bearer(tenant.key) })).status).toBe(403);
  });

  test('identity-provider token: one without `exp` never expires, so it is refused; a few seconds of clock skew are allowed', async () => {
    const { privateKey } = devIssuerKey(api.deps.config);
    const sign = (edit: (jwt: SignJWT) => SignJWT) =>
      edit(new SignJWT({ account_ids: [tenant.accountId] }).setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' }).setSubject('user-1').setIssuer(api.deps.config.OIDC_ISSUER).setAudience(api.deps.config.OIDC_AUDIENCE)).sign(privateKey);
    const status = async (token: string) => (await fetch(`${api.url}/v1/_probe/analytics`, { headers: bearer(token) })).status;
    expect(await status(await sign((jwt) => jwt))).toBe(401);
    const now = Math.floor(Date.now() / 1000);
    expect(await status(await sign((jwt) => jwt.setNotBefore(now + 2).setExpirationTime(now + 60)))).toBe(200);
    expect(await status(await sign((jwt) => jwt.setNotBefore(now + 60).setExpirationTime(now + 120)))).toBe(401);
    expect(await status(await sign((jwt) => jwt.setExpirationTime(now - 60)))).toBe(401);
  });

  test('a browser token expires exactly when it says: expires_at is its exp', async () => {
    const { token, expiresAt } = await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: 'a' }, 60);
    const { exp } = decodeJwt(token);
    expect(expiresAt.getTime()).toBe(exp! * 1000);
  });

  test('identity-provider token: one that grants no account is 403; keys that cannot be fetched are 503, not 401', async () => {
    const noAccount = await signDevIdpToken(api.deps.config, { subject: 'user-2', accountIds: [] });
    const refused = await fetch(`${api.url}/v1/_probe/analytics`, { headers: bearer(noAccount) });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.type).toBe('permission_error');
    // A forged token is a bad credential (401), whatever algorithm it names.
    const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const alg of ['RS256', 'ES256', 'PS256', 'HS512']) {
      const forged = `${segment({ alg, typ: 'JWT' })}.${segment({ sub: 'x', account_ids: [tenant.accountId] })}.${Buffer.from('sig').toString('base64url')}`;
      expect((await fetch(`${api.url}/v1/_probe/analytics`, { headers: bearer(forged) })).status).toBe(401);
    }

    // An identity provider whose key set is unreachable: the token was never judged.
    const unreachable = await startApi({ OIDC_JWKS_URL: 'http://127.0.0.1:1/.well-known/jwks.json' }, { extraRouters: [probeRouter(() => unreachable)] });
    try {
      const token = await signDevIdpToken(api.deps.config, { subject: 'user-1', accountIds: [tenant.accountId] });
      const response = await fetch(`${unreachable.url}/v1/_probe/analytics`, { headers: bearer(token) });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).not.toBeNull();
    } finally {
      await unreachable.close();
    }
  });

  test('service token: authenticates a site; a revoked or unknown one is 401', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    expect((await fetch(`${api.url}/v1/_probe/agents`, { headers: bearer(token) })).status).toBe(200);
    expect((await fetch(`${api.url}/v1/_probe/agents`, { headers: bearer('sst_' + 'x'.repeat(43)) })).status).toBe(401);
  });
});

describe('credits', () => {
  test('exhausted credits are refused with 402 insufficient_credits, distinct from 429', async () => {
    const poor = await createTenant(api.deps.db, { credits: 0n });
    const response = await post('/v1/_probe/chat', bearer(poor.key));
    expect(response.status).toBe(402);
    const body = await json(response);
    expect(body.error.type).toBe('insufficient_credits');
    expect(body.error.message).toMatch(/top up/);
  });

  test('50 parallel metered requests: grants minus debits equals the balance exactly', async () => {
    const rich = await createTenant(api.deps.db, { credits: 1000n });
    const responses = await Promise.all(Array.from({ length: 50 }, () => post('/v1/_probe/chat', bearer(rich.key))));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    const balance = await getBalanceNano(api.deps.db, rich.projectId);
    const { rows } = await api.deps.db.query('SELECT sum(delta_nano)::text AS total, count(*) FILTER (WHERE kind = $2)::int AS debits FROM credit_ledger WHERE project_id = $1', [rich.projectId, 'debit']);
    expect(rows[0].debits).toBe(50);
    expect(BigInt(rows[0].total)).toBe(balance);
    expect(balance).toBe(950n * 1_000_000_000n);
    const usage = await api.deps.db.query('SELECT count(*)::int AS n FROM usage_records WHERE project_id = $1', [rich.projectId]);
    expect(usage.rows[0].n).toBe(50);
  });

  test('concurrent requests overshoot a small balance by at most those in flight', async () => {
    const small = await createTenant(api.deps.db, { credits: 3n });
    const responses = await Promise.all(Array.from({ length: 10 }, () => post('/v1/_probe/chat', bearer(small.key))));
    const ok = responses.filter((r) => r.status === 200).length;
    expect(ok).toBeGreaterThanOrEqual(3);
    expect(responses.filter((r) => r.status !== 200).every((r) => r.status === 402)).toBe(true);
    const balance = await getBalanceNano(api.deps.db, small.projectId);
    expect(balance).toBe(BigInt(3 - ok) * 1_000_000_000n);
    expect((await post('/v1/_probe/chat', bearer(small.key))).status).toBe(402);
  });
});

describe('rate limiting', () => {
  test('past the burst: 429 with Retry-After', async () => {
    const limited = await createTenant(api.deps.db, { credits: 1000n });
    const responses = await Promise.all(Array.from({ length: 70 }, () => post('/v1/_probe/chat', bearer(limited.key))));
    const tooMany = responses.filter((r) => r.status === 429);
    expect(tooMany.length).toBeGreaterThanOrEqual(9);
    expect(Number(tooMany[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await json(tooMany[0]!)).error.type).toBe('rate_limit_error');
  });

  test('one bucket per credential however the header spells it (spaces, the scheme\'s case)', async () => {
    const limited = await createTenant(api.deps.db, { credits: 1000n });
    const spellings = Array.from({ length: 70 }, (_, i) => ({ authorization: `${i % 2 ? 'bearer' : 'BEARER'}${' '.repeat(1 + i)}${limited.key}`, 'content-type': 'application/json' }));
    const responses = await Promise.all(spellings.map((headers) => post('/v1/_probe/chat', headers)));
    expect(responses.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(responses.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(9);
  });
});

test('made-up credentials, a fresh one per request, are limited by the client address once refused', async () => {
  // Its own api: the refused-credential bucket of this address must not starve the other tests.
  const own: TestApi = await startApi({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '30' }, { extraRouters: [probeRouter(() => own)] });
  try {
    const known = await createTenant(own.deps.db, { credits: 1000n });
    expect((await post('/v1/_probe/chat', bearer(known.key), own)).status).toBe(200);
    const fresh = () => bearer(`svc_${randomBytes(32).toString('base64url')}`);
    const statuses = [];
    for (let i = 0; i < 40; i++) statuses.push((await post('/v1/_probe/chat', fresh(), own)).status);
    expect(statuses.slice(0, 30).every((status) => status === 401)).toBe(true);
    expect(statuses.slice(31)).toEqual(Array(9).fill(429));
    // A credential accepted before still gets through from that address; one never seen waits with the rest.
    expect((await post('/v1/_probe/chat', bearer(known.key), own)).status).toBe(200);
    const unseen = await createTenant(own.deps.db, { credits: 1000n });
    expect((await post('/v1/_probe/chat', bearer(unseen.key), own)).status).toBe(429);
  } finally {
    await own.close();
  }
});

test('made-up credentials sent all at once get no more lookups than the address bucket allows', async () => {
  const own: TestApi = await startApi({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '30' }, { extraRouters: [probeRouter(() => own)] });
  try {
    // Every lookup waits (the key table locked) until all 60 requests are either refused or waiting.
    const locker = await own.deps.db.connect();
    const statuses: number[] = [];
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      const requests = Array.from({ length: 60 }, () =>
        post('/v1/_probe/chat', bearer(`svc_${randomBytes(32).toString('base64url')}`), own).then((r) => void statuses.push(r.status)),
      );
      const waiting = async () =>
        Number((await api.deps.db.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%api_keys%'`)).rows[0].n) +
        own.deps.db.waitingCount;
      for (let i = 0; i < 250 && statuses.length + (await waiting()) < 60; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      await locker.query('COMMIT');
      await Promise.all(requests);
    } finally {
      locker.release();
    }
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(31);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(29);
  } finally {
    await own.close();
  }
});

describe('logs', () => {
  test('no secret appears in any log line', async () => {
    await post('/v1/_probe/chat', bearer(tenant.key));
    await post('/v1/_probe/messages', { 'x-api-key': tenant.key, 'content-type': 'application/json' });
    const all = api.logs.join('\n');
    expect(api.logs.length).toBeGreaterThan(5);
    expect(all).not.toContain(tenant.key);
    expect(all).not.toContain(tenant.key.slice(4, 20));
  });
});

describe('admin CLI', () => {
  const admin = (...args: string[]) =>
    promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', ...args], {
      env: { ...process.env, DATABASE_URL: api.deps.config.DATABASE_URL },
    });

  test('account, project, key, credits and revoke, printing JSON', async () => {
    const account = JSON.parse((await admin('account', 'create', '--name', 'CLI')).stdout);
    const project = JSON.parse((await admin('project', 'create', '--account', account.id, '--name', 'P')).stdout);
    const key = JSON.parse((await admin('key', 'create', '--project', project.id, '--preset', 'restricted', '--scopes', 'chat=write,agents=read')).stdout);
    expect(key.key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(key.scopes).toMatchObject({ chat: 'write', agents: 'read', kb: 'none' });
    await admin('credits', 'grant', '--project', project.id, '--credits', '2.5');
    expect(JSON.parse((await admin('credits', 'show', '--project', project.id)).stdout).balance_nano).toBe('2500000000');
    const listed = JSON.parse((await admin('key', 'list', '--project', project.id)).stdout);
    expect(JSON.stringify(listed)).not.toContain(key.key);
    await admin('key', 'revoke', '--id', key.id);
    expect((await post('/v1/_probe/chat', bearer(key.key))).status).toBe(401);
    await expect(admin('key', 'create', '--project', project.id, '--preset', 'bogus')).rejects.toMatchObject({ code: 1 });
    // An owner subject without --type personal would be dropped: refused, saying so.
    await expect(admin('key', 'create', '--project', project.id, '--preset', 'all', '--owner-subject', 'someone')).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('--owner-subject needs --type personal') });
  });

  test('a misspelt flag, a flag without its value, a blank name or an unknown id is an error naming it, never a silent default', async () => {
    const refused = (stderr: string, ...args: string[]) => expect(admin(...args)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining(stderr) });
    await refused("Unknown option '--scope'", 'key', 'create', '--project', 'proj_x', '--preset', 'restricted', '--scope', 'chat=write');
    await refused("'--name <value>' argument missing", 'account', 'create', '--name');
    await refused('--name must not be blank', 'account', 'create', '--name', '  ');
    await refused('no project with id proj_nope', 'credits', 'show', '--project', 'proj_nope');
    await refused('no project with id proj_nope', 'key', 'list', '--project', 'proj_nope');
    await refused('no account with id acct_nope', 'idp-token', 'create', '--subject', 'u', '--account', 'acct_nope');
    await refused('no account with id acct_nope', 'service-token', 'create', '--account', 'acct_nope', '--client-id', 'c');
    await refused('no site with id site_nope', 'site', 'disconnect-user', '--id', 'site_nope', '--subject', 'u');
    // A flag the command does not take, a repeated flag, a stray word, scopes a preset would ignore.
    await refused("--credits does not apply to 'account create'", 'account', 'create', '--name', 'Z', '--credits', '5');
    await refused('--project is given twice', 'credits', 'show', '--project', 'proj_a', '--project', 'proj_b');
    await refused("unexpected 'stray' after 'credits show'", 'credits', 'show', '--project', 'proj_a', 'stray');
    await refused('--scopes needs --preset restricted', 'key', 'create', '--project', 'proj_a', '--preset', 'all', '--scopes', 'chat=none');
  });
});
