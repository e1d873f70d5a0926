import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { request as httpRequest } from 'node:http';
import { startApi, type TestApi } from '../../support/harness';
import { uniqueId } from '../../support/config';
import { createTenant, json, type Tenant } from '../../support/factories';
import { signDevIdpToken } from '../../../src/auth/tokens';
import { setSiteStatus } from '../../../src/store/sites';

let api: TestApi;
let tenant: Tenant;
let idpToken: string;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
  idpToken = await signDevIdpToken(api.deps.config, { subject: uniqueId('user-'), accountIds: [tenant.accountId] });
});
afterAll(() => api.close());

const registerClient = (metadata: unknown, token = idpToken) =>
  fetch(`${api.url}/oauth/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });

const tokenRequest = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${api.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });

const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` });

describe('OAuth Dynamic Client Registration → token → POST /v1/sites', () => {
  test('full flow: metadata, register, client_credentials token, site registration, re-registration', async () => {
    const metadata = await json(await fetch(`${api.url}/.well-known/oauth-authorization-server`));
    expect(metadata.registration_endpoint).toBe(`${api.url}/oauth/register`);
    expect(metadata.token_endpoint).toBe(`${api.url}/oauth/token`);
    expect(metadata.grant_types_supported).toEqual(['client_credentials']);

    const registered = await registerClient({ client_name: 'My CMS site', software_id: 'cms-plugin', software_version: '1.2.3', unknown_member: 'ignored' });
    expect(registered.status).toBe(201);
    expect(registered.headers.get('cache-control')).toBe('no-store');
    const client = await json(registered);
    expect(client).toMatchObject({
      client_name: 'My CMS site',
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'sites:register',
      client_secret_expires_at: 0,
      account_id: tenant.accountId,
    });
    expect(client.client_id).toMatch(/^client_/);
    expect(typeof client.client_secret).toBe('string');
    expect(client.unknown_member).toBeUndefined();

    const tokenResponse = await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret));
    expect(tokenResponse.status).toBe(200);
    expect(tokenResponse.headers.get('cache-control')).toBe('no-store');
    const token = await json(tokenResponse);
    expect(token).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'sites:register' });
    expect(token.access_token).toMatch(/^oat_[A-Za-z0-9_-]{43}$/);

    const site = { site_url: `https://${uniqueId('s')}.example.com`, project_id: tenant.projectId };
    const first = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify(site) });
    expect(first.status).toBe(201);
    const created = await json(first);
    expect(created.client_id).toBe(client.client_id);

    // A fresh token of the same client updates the same site.
    const again = await json(await tokenRequest({ grant_type: 'client_credentials', scope: 'sites:register' }, basic(client.client_id, client.client_secret)));
    const second = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${again.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify(site) });
    expect(second.status).toBe(200);
    expect(await json(second)).toEqual(created);

    // The OAuth token is for site registration only.
    const elsewhere = await fetch(`${api.url}/oauth/register`, { method: 'POST', headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' }, body: '{}' });
    expect(elsewhere.status).toBe(401);
  });

  test('admin oauth revoke-client: its live tokens are refused on their next use, and its secret gets no new one; an unknown id is an error', async () => {
    const client = await json(await registerClient({ client_name: 'to revoke' }));
    const token = (await json(await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret)))).access_token;
    const register = (accessToken: string) =>
      fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: `https://${uniqueId('r')}.example.com` }) });
    expect((await register(token)).status).toBe(201);
    const admin = (...args: string[]) => promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', ...args], { env: { ...process.env, DATABASE_URL: api.deps.config.DATABASE_URL } });
    const { stdout } = await admin('oauth', 'revoke-client', '--client-id', client.client_id);
    expect(JSON.parse(stdout)).toEqual({ client_id: client.client_id, revoked: true, revoked_tokens: 1 });
    expect((await register(token)).status).toBe(401);
    const again = await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret));
    expect([again.status, (await json(again)).error]).toEqual([401, 'invalid_client']);
    await expect(admin('oauth', 'revoke-client', '--client-id', 'client_nope')).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('no OAuth client with id client_nope') });
  });

  test("a client whose site is revoked or suspended gets no new token (unauthorized_client), and its tokens are refused", async () => {
    const client = await json(await registerClient({ client_name: 'site client' }));
    const token = (await json(await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret)))).access_token;
    const site = await json(
      await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: `https://${uniqueId('s')}.example.com` }) }),
    );
    const refusedWhile = async (status: 'suspended' | 'revoked') => {
      await setSiteStatus(api.deps.db, site.site_id, status);
      const refused = await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret));
      expect([refused.status, await json(refused)]).toEqual([400, { error: 'unauthorized_client', error_description: `the site this client registered is ${status}` }]);
    };
    await refusedWhile('suspended');
    await setSiteStatus(api.deps.db, site.site_id, 'active');
    expect((await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret))).status).toBe(200);
    await refusedWhile('revoked'); // for good: a revoked site is not activated again
  });

  test('client_secret_post clients authenticate in the body', async () => {
    const client = await json(await registerClient({ token_endpoint_auth_method: 'client_secret_post' }));
    const response = await tokenRequest({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret });
    expect(response.status).toBe(200);
    // ...and not with the other method
    expect((await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret))).status).toBe(401);
  });

  test('an expired or revoked access token is 401 on POST /v1/sites', async () => {
    const client = await json(await registerClient({}));
    const token = await json(await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret)));
    await api.deps.db.query("UPDATE oauth_access_tokens SET expires_at = now() - interval '1 second' WHERE client_id = $1", [client.client_id]);
    const response = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: 'https://x.example.com' }) });
    expect(response.status).toBe(401);
    expect((await json(response)).error.type).toBe('invalid_token');
  });
});

describe('registration endpoint errors (RFC 7591 §3.2.2)', () => {
  test('no initial access token: 401 invalid_token with WWW-Authenticate', async () => {
    const response = await fetch(`${api.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect(await json(response)).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
  });

  test('an API key is not an initial access token', async () => {
    const response = await registerClient({}, tenant.key);
    expect(response.status).toBe(401);
    expect((await json(response)).error).toBe('invalid_token');
  });

  test.each([
    ['unsupported grant type', { grant_types: ['authorization_code'] }, 'invalid_client_metadata'],
    ['unsupported auth method', { token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    ['unknown scope', { scope: 'admin' }, 'invalid_client_metadata'],
    ['bad redirect uri', { redirect_uris: ['not a uri'] }, 'invalid_redirect_uri'],
    ['wrong type', { client_name: 42 }, 'invalid_client_metadata'],
  ])('%s: 400 %s', async (_label, metadata, code) => {
    const response = await registerClient(metadata);
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ error: code, error_description: expect.any(String) });
  });

  test('an account the user does not belong to: 403 (the spec), insufficient_scope (RFC 6750)', async () => {
    const other = await createTenant(api.deps.db);
    const response = await registerClient({ account_id: other.accountId });
    expect(response.status).toBe(403);
    expect(await json(response)).toEqual({ error: 'insufficient_scope', error_description: 'account_id is not an account of the registering user' });
  });

  test('an account the identity provider vouches for but the gateway never provisioned: 403 insufficient_scope, not a 500', async () => {
    const token = await signDevIdpToken(api.deps.config, { subject: uniqueId('user-'), accountIds: ['acct_notprovisioned000000'] });
    for (const metadata of [{}, { account_id: 'acct_notprovisioned000000' }]) {
      const response = await registerClient(metadata, token);
      expect(response.status).toBe(403);
      expect(await json(response)).toEqual({ error: 'insufficient_scope', error_description: 'account_id is not an account of this gateway' });
    }
  });

  test.each([
    ['an unpaired surrogate', '{"client_name":"x\\ud800"}', /surrogate/],
    ['nesting past the limit', `{"client_name":"x","extra":${'['.repeat(200)}${']'.repeat(200)}}`, /deeper than 128/],
  ])('%s in the metadata: 400 invalid_client_metadata', async (_label, body, message) => {
    const response = await fetch(`${api.url}/oauth/register`, { method: 'POST', headers: { authorization: `Bearer ${idpToken}`, 'content-type': 'application/json' }, body });
    expect(response.status).toBe(400);
    const error = await json(response);
    expect(error.error).toBe('invalid_client_metadata');
    expect(error.error_description).toMatch(message);
  });

  test('a compressed body is refused (415), on registration and on the token endpoint', async () => {
    const gzipped = await fetch(`${api.url}/oauth/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idpToken}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ client_name: 'x' })),
    });
    expect(gzipped.status).toBe(415);
    expect(await json(gzipped)).toEqual({ error: 'invalid_request', error_description: "Content-Encoding 'gzip' is not supported; send the body uncompressed" });
    const token = await fetch(`${api.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'br' }, body: 'grant_type=client_credentials' });
    expect(token.status).toBe(415);
  });

  test("the metadata's issuer is the api's own address, whatever Host the request names; PUBLIC_BASE_URL sets it", async () => {
    const metadataWithHost = (url: string) =>
      new Promise<Record<string, string>>((resolve, reject) => {
        const request = httpRequest(`${url}/.well-known/oauth-authorization-server`, { headers: { host: 'evil.example' } }, (response) => {
          let body = '';
          response.on('data', (chunk) => (body += chunk));
          response.on('end', () => resolve(JSON.parse(body)));
        });
        request.on('error', reject);
        request.end();
      });
    expect(await metadataWithHost(api.url)).toMatchObject({ issuer: api.url, registration_endpoint: `${api.url}/oauth/register`, token_endpoint: `${api.url}/oauth/token` });
    const configured = await startApi({ PUBLIC_BASE_URL: 'https://gateway.example.com/' });
    try {
      expect(await metadataWithHost(configured.url)).toMatchObject({ issuer: 'https://gateway.example.com', token_endpoint: 'https://gateway.example.com/oauth/token' });
    } finally {
      await configured.close();
    }
  });

  test('a NUL character in client metadata: 400 invalid_client_metadata naming the member', async () => {
    const response = await registerClient({ client_name: 'a\u0000b', grant_types: ['client_credentials'] });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ error: 'invalid_client_metadata', error_description: 'client_name: text values must not contain the NUL character (U+0000)' });
  });

  test('a user of several accounts must name one', async () => {
    const other = await createTenant(api.deps.db);
    const token = await signDevIdpToken(api.deps.config, { subject: uniqueId('u'), accountIds: [tenant.accountId, other.accountId] });
    expect((await json(await registerClient({}, token))).error).toBe('invalid_client_metadata');
    const named = await json(await registerClient({ account_id: other.accountId }, token));
    expect(named.account_id).toBe(other.accountId);
  });
});

describe('token endpoint errors (RFC 6749 §5.2)', () => {
  let client: { client_id: string; client_secret: string };
  beforeAll(async () => (client = await json(await registerClient({}))));

  test('wrong secret: 401 invalid_client with WWW-Authenticate Basic', async () => {
    const response = await tokenRequest({ grant_type: 'client_credentials' }, basic(client.client_id, 'wrong'));
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(await json(response)).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
  });

  test('unknown client: 401 invalid_client', async () => {
    expect((await json(await tokenRequest({ grant_type: 'client_credentials' }, basic('client_nope', 'x')))).error).toBe('invalid_client');
  });

  test.each([
    ['unsupported grant', { grant_type: 'password' }, 'unsupported_grant_type'],
    ['missing grant', {}, 'invalid_request'],
    ['unknown scope', { grant_type: 'client_credentials', scope: 'everything' }, 'invalid_scope'],
  ])('%s: 400 %s', async (_label, form, code) => {
    const response = await tokenRequest(form as Record<string, string>, basic(client.client_id, client.client_secret));
    expect(response.status).toBe(400);
    expect((await json(response)).error).toBe(code);
  });

  test('two client authentication methods at once: invalid_request', async () => {
    const response = await tokenRequest({ grant_type: 'client_credentials', client_secret: client.client_secret }, basic(client.client_id, client.client_secret));
    expect(response.status).toBe(400);
    expect((await json(response)).error).toBe('invalid_request');
  });
});

test('made-up bearer tokens at /oauth/register are refused credentials for the rate limiter too (no way around its address bucket)', async () => {
  const own = await startApi({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '30' });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const response = await fetch(`${own.url}/oauth/register`, {
        method: 'POST',
        headers: { authorization: `Bearer svc_${uniqueId('x').padEnd(43, 'x').slice(0, 43)}`, 'content-type': 'application/json' },
        body: '{}',
      });
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 30).every((status) => status === 401)).toBe(true);
    expect(statuses.slice(31)).toEqual(Array(9).fill(429));
  } finally {
    await own.close();
  }
});
