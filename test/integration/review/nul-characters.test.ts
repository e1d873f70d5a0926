import { startApi, type TestApi } from '../../support/harness';
import { createSession, tenantWithAgent } from '../sessions/support';
import { platformUserWithAccount, startPlatform } from '../../support/platform';
import { hashPassword } from '../../../src/domain/platform';
import { insertPlatformUser } from '../../../src/store/platform';
import { uniqueId } from '../../support/config';
import { bearer, createServiceToken, json, type Tenant } from '../../support/factories';

/**
 * Postgres text and jsonb cannot hold U+0000. Any input that reaches a query with one
 * used to surface as a 500 ("invalid byte sequence for encoding UTF8: 0x00"); it is a bad
 * input and must answer a clear 4xx in the spec's envelope, with nothing written.
 */
let api: TestApi;
let tenant: Tenant;
let agentId: string;
let sessionId: string;
beforeAll(async () => {
  api = await startApi();
  const created = await tenantWithAgent(api);
  tenant = created.tenant;
  agentId = created.agent.id;
  sessionId = (await createSession(created.client, agentId)).id;
});
afterAll(() => api.close());

function expectEnvelope(body: any, status: number): void {
  expect(body).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: status, request_id: expect.any(String) } });
  expect(body.error.message).not.toMatch(/byte sequence|UTF8|0x00|Unicode escape|internal server error/i);
}

describe('U+0000 in inputs: 4xx, never 500', () => {
  test.each([
    ['GET /v1/agents/{id}', () => `/v1/agents/%00`],
    ['GET /v1/sessions/{id}', () => `/v1/sessions/%00`],
    ['GET /v1/kb/collections/{id}', () => `/v1/kb/collections/%00`],
    ['GET /v1/sessions?agent_id', () => `/v1/sessions?project_id=${tenant.projectId}&agent_id=%00`],
    ['GET events?after_id', () => `/v1/sessions/${sessionId}/events?after_id=%00`],
  ])('%s', async (_name, path) => {
    const response = await fetch(`${api.url}${path()}`, { headers: bearer(tenant.key) });
    expect([400, 404]).toContain(response.status);
    expectEnvelope(await json(response), response.status);
  });

  test('an agent whose name holds U+0000: 400, no agent created', async () => {
    const name = uniqueId('nul-agent-');
    const response = await fetch(`${api.url}/v1/agents`, {
      method: 'POST',
      headers: bearer(tenant.key),
      body: JSON.stringify({ project_id: tenant.projectId, name: `${name}\u0000`, model: 'openai/gpt-4o' }),
    });
    expect(response.status).toBe(400);
    const body = await json(response);
    expectEnvelope(body, 400);
    expect(body.error.message).toBe('name: text values must not contain the NUL character (U+0000)');
    const { rows } = await api.deps.db.query('SELECT 1 FROM agents WHERE project_id = $1 AND name LIKE $2', [tenant.projectId, `${name}%`]);
    expect(rows).toHaveLength(0);
  });

  test('session metadata (jsonb) holding U+0000: 400, no session created', async () => {
    const before = await api.deps.db.query('SELECT count(*)::int AS n FROM sessions WHERE agent_id = $1', [agentId]);
    const response = await fetch(`${api.url}/v1/sessions`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ agent: agentId, metadata: { k: 'a\u0000' } }) });
    expect(response.status).toBe(400);
    const body = await json(response);
    expectEnvelope(body, 400);
    expect(body.error.message).toMatch(/^metadata\.k: /);
    const after = await api.deps.db.query('SELECT count(*)::int AS n FROM sessions WHERE agent_id = $1', [agentId]);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  test('collection metadata (jsonb) holding U+0000: 400', async () => {
    const response = await fetch(`${api.url}/v1/kb/collections`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ name: uniqueId('c-'), metadata: { k: 'a\u0000' } }) });
    expect(response.status).toBe(400);
    expectEnvelope(await json(response), 400);
  });

  test('site registration (inside its transaction) holding U+0000: 400, nothing registered', async () => {
    const clientId = uniqueId('client-nul-');
    const token = await createServiceToken(api.deps.db, tenant.accountId, clientId);
    const response = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: bearer(token), body: JSON.stringify({ site_url: 'https://nul.example.com/', display_name: 'a\u0000b' }) });
    expect(response.status).toBe(400);
    expectEnvelope(await json(response), 400);
    const { rows } = await api.deps.db.query('SELECT 1 FROM sites WHERE client_id = $1', [clientId]);
    expect(rows).toHaveLength(0);
  });
});

describe('platform API: U+0000 in the Basic user name', () => {
  let platform: Awaited<ReturnType<typeof startPlatform>>;
  let url: string;
  beforeAll(async () => {
    platform = await startPlatform(api.deps.db);
    url = platform.url;
  });
  afterAll(() => platform.close());

  test('401 with WWW-Authenticate, not 500', async () => {
    const username = uniqueId('platform-nul-');
    await insertPlatformUser(api.deps.db, username, await hashPassword('pw'));
    const response = await fetch(`${url}/v1/sites`, { headers: { authorization: `Basic ${Buffer.from(`${username}\u0000:pw`).toString('base64')}` } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm="platform"/);
    expect((await json(response)).errors[0]).toMatchObject({ resource: 'authentication', type: 'access_error' });
  });

  test('an app name or environment variable holding U+0000: 400 in the platform envelope, nothing created', async () => {
    const { headers, accountId } = await platformUserWithAccount(api.deps.db, 'platform-nul-');
    const apps = `${url}/v1/accounts/${accountId}/apps`;

    const bad = await fetch(apps, { method: 'POST', headers, body: JSON.stringify({ name: 'a\u0000b' }) });
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ message: expect.any(String), errors: [expect.objectContaining({ type: 'invalid_value', field: 'name' })] });
    expect((await json(await fetch(apps, { headers }))).results).toEqual([]);

    const app = await json(await fetch(apps, { method: 'POST', headers, body: JSON.stringify({ name: 'ok' }) }));
    const environment = await fetch(`${apps}/${app.id}/environments`, { method: 'POST', headers, body: JSON.stringify({ name: 'prod', variables: { A: 'x\u0000' } }) });
    expect(environment.status).toBe(400);
  });
});
