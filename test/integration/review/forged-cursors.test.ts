import { startApi, type TestApi } from '../../support/harness';
import { bearer, createTenant, json, type Tenant } from '../../support/factories';
import { encodeCursor } from '../../../src/domain/cursor';

/**
 * Page cursors are opaque to clients but not signed: a tampered one is a bad input and
 * must be a 400 naming `page`/`after`, never a 500 from Postgres failing to cast it.
 */
let api: TestApi;
let tenant: Tenant;
let sessionId: string;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
  const agent = await json(
    await fetch(`${api.url}/v1/agents`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ project_id: tenant.projectId, name: 'cursor', model: 'openai/gpt-4o' }) }),
  );
  sessionId = (await json(await fetch(`${api.url}/v1/sessions`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ agent: agent.id }) }))).id;
});
afterAll(() => api.close());

async function expect400(path: string, param: string): Promise<void> {
  const response = await fetch(`${api.url}${path}`, { headers: bearer(tenant.key) });
  expect(response.status).toBe(400);
  const body = await json(response);
  expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
  expect(body.error.message).toMatch(new RegExp(`^${param}`));
}

describe('tampered page cursors: 400', () => {
  test('events: a sequence that is not a number', async () => {
    const page = encodeCursor({ list: `events:${sessionId}:asc`, at: '2024-01-01T00:00:00.000000Z', key: 'abc' });
    await expect400(`/v1/sessions/${sessionId}/events?page=${page}`, 'page');
  });

  test('sessions: a time JavaScript parses but Postgres does not', async () => {
    const page = encodeCursor({ list: `sessions:${tenant.projectId}`, at: '0', key: 'sesn_x' });
    await expect400(`/v1/sessions?project_id=${tenant.projectId}&page=${page}`, 'page');
  });

  test('agents: an impossible calendar date', async () => {
    const page = encodeCursor({ list: `agents:${tenant.projectId}`, at: '2021-02-30T00:00:00.000000Z', key: 'agent_x' });
    await expect400(`/v1/agents?project_id=${tenant.projectId}&page=${page}`, 'page');
  });

  test('collections: a position beyond the timestamp range', async () => {
    const after = Buffer.from(JSON.stringify(['9999999999999999999', 'kbc_x'])).toString('base64url');
    await expect400(`/v1/kb/collections?after=${after}`, 'after');
  });

  test('a genuine cursor still pages', async () => {
    for (let i = 0; i < 3; i++) {
      await fetch(`${api.url}/v1/sessions/${sessionId}/events`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ events: [{ type: 'user.interrupt' }] }) });
    }
    const first = await json(await fetch(`${api.url}/v1/sessions/${sessionId}/events?limit=2`, { headers: bearer(tenant.key) }));
    expect(first.next_page).toEqual(expect.any(String));
    const second = await fetch(`${api.url}/v1/sessions/${sessionId}/events?limit=2&page=${first.next_page}`, { headers: bearer(tenant.key) });
    expect(second.status).toBe(200);
    expect((await json(second)).data.length).toBeGreaterThan(0);
  });
});
