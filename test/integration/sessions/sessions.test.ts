import { startApi, type TestApi } from '../../support/harness';
import { uniqueId } from '../../support/config';
import { createKey, createServiceToken, createSiblingProject, createTenant } from '../../support/factories';
import { apiClient, createAgent, createSession, PLAIN_MODEL, tenantWithAgent } from './support';
import { lockWaiters } from '../../support/lock-waiters';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '5000' });
});
afterAll(() => api.close());

const x = (n: number, ch = 'a') => ch.repeat(n);

test('a session PATCH racing its move to another project answers a credential that reaches both projects (no 404)', async () => {
  const { tenant, client, agent } = await tenantWithAgent(api);
  const other = await createSiblingProject(api.deps.db, tenant.accountId);
  const session = await createSession(client, agent.id);
  const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId));
  const mover = await api.deps.db.connect();
  try {
    await mover.query('BEGIN');
    await mover.query('UPDATE agents SET project_id = $2 WHERE id = $1', [agent.id, other]);
    await mover.query('UPDATE sessions SET project_id = $2 WHERE id = $1', [session.id, other]);
    const patched = site.patch(`/v1/sessions/${session.id}`, { title: 'renamed' });
    await lockWaiters(api.deps.db, '%FROM sessions%FOR UPDATE%');
    await mover.query('COMMIT');
    const reply = await patched;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ title: 'renamed' });
  } finally {
    await mover.query('ROLLBACK').catch(() => undefined);
    mover.release();
  }
});

describe('POST /v1/sessions', () => {
  test('a session created while its agent is being changed is checked against the agent as committed (no stale project or version)', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    const other = await createSiblingProject(api.deps.db, tenant.accountId);
    // A change of the agent in flight (as a PATCH moving it holds its row), not yet committed.
    const mover = await api.deps.db.connect();
    try {
      await mover.query('BEGIN');
      await mover.query('SELECT 1 FROM agents WHERE id = $1 FOR UPDATE', [agent.id]);
      const created = client.post('/v1/sessions', { agent: { id: agent.id, version: agent.version } });
      // The create waits on the agent's row...
      await lockWaiters(api.deps.db, '%FROM agents%FOR SHARE%');
      // ...while the change moves the agent to another project and bumps its version.
      await mover.query('UPDATE agents SET project_id = $2, version = version + 1 WHERE id = $1', [agent.id, other]);
      await mover.query('COMMIT');
      // The agent is no longer this key's project's: as if absent.
      expect((await created).status).toBe(404);
      const { rows } = await api.deps.db.query('SELECT project_id FROM sessions WHERE agent_id = $1', [agent.id]);
      expect(rows).toEqual([]);
    } finally {
      await mover.query('ROLLBACK').catch(() => undefined);
      mover.release();
    }
  });

  test('a session has its resolved agent, status idle, all five usage integers and round-trips its fields', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const reply = await client.post('/v1/sessions', { agent: agent.id, title: 'Hi', reasoning_effort: 'high', metadata: { k: 'v' }, owner_id: 'visitor-1' });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      type: 'session',
      agent,
      status: 'idle',
      title: 'Hi',
      reasoning_effort: 'high',
      metadata: { k: 'v' },
      owner_id: 'visitor-1',
      usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, credits_nano: 0 },
      archived_at: null,
      updated_at: null,
    });
    expect(reply.body.id).toMatch(/^sesn_/);
    const read = await client.get(`/v1/sessions/${reply.body.id}`);
    expect(read.body).toEqual(reply.body);
  });

  test('optional fields are omitted when unset (reasoning_effort, owner_id)', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    expect(session).not.toHaveProperty('reasoning_effort');
    expect(session).not.toHaveProperty('owner_id');
  });

  test('agent as {id, type, version}: the current version is accepted, a stale one is 409', async () => {
    const { client, agent } = await tenantWithAgent(api);
    expect((await client.post('/v1/sessions', { agent: { id: agent.id, type: 'agent', version: 1 } })).status).toBe(201);
    expect((await client.post('/v1/sessions', { agent: { id: agent.id } })).status).toBe(201);
    await client.patch(`/v1/agents/${agent.id}`, { name: 'v2' });
    expect((await client.post('/v1/sessions', { agent: { id: agent.id, type: 'agent', version: 1 } })).status).toBe(409);
    expect((await client.post('/v1/sessions', { agent: { id: agent.id, type: 'tool' } })).status).toBe(400);
    expect((await client.post('/v1/sessions', {})).status).toBe(400);
  });

  test('limits: title 512, owner_id 255, metadata 16 keys (at the bound accepted, past it 400)', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const post = (extra: Record<string, unknown>) => client.post('/v1/sessions', { agent: agent.id, ...extra });
    expect((await post({ title: x(512, 'é') })).status).toBe(201);
    expect((await post({ title: x(513) })).status).toBe(400);
    expect((await post({ owner_id: x(255) })).status).toBe(201);
    expect((await post({ owner_id: x(256) })).status).toBe(400);
    const meta = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    expect((await post({ metadata: meta(16) })).status).toBe(201);
    const over = await post({ metadata: meta(17) });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toMatch(/^metadata/);
    expect((await post({ metadata: { k: 5 } })).status).toBe(400);
    expect((await post({ unknown: 1 })).status).toBe(400);
  });

  test("reasoning_effort follows the bound agent's model enum", async () => {
    const { client, agent } = await tenantWithAgent(api);
    expect((await client.post('/v1/sessions', { agent: agent.id, reasoning_effort: 'minimal' })).status).toBe(201);
    expect((await client.post('/v1/sessions', { agent: agent.id, reasoning_effort: 'ultra' })).status).toBe(400);
    const plain = await createAgent(client, agent.project_id, { model: PLAIN_MODEL });
    const refused = await client.post('/v1/sessions', { agent: plain.id, reasoning_effort: 'low' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/reasoning_effort/);
  });

  test("an agent's new model clears a session override it does not take, and keeps one it does", async () => {
    const { client, agent } = await tenantWithAgent(api);
    const minimal = (await client.post('/v1/sessions', { agent: agent.id, reasoning_effort: 'minimal' })).body;
    const high = (await client.post('/v1/sessions', { agent: agent.id, reasoning_effort: 'high' })).body;
    expect((await client.patch(`/v1/agents/${agent.id}`, { model: 'google/gemini-2.5-pro' })).status).toBe(200);
    expect((await client.get(`/v1/sessions/${minimal.id}`)).body).not.toHaveProperty('reasoning_effort');
    expect((await client.get(`/v1/sessions/${high.id}`)).body).toMatchObject({ reasoning_effort: 'high' });
  });

  test("an agent of another project is 404, like an absent one; a site token of the account may use it", async () => {
    const { tenant, agent } = await tenantWithAgent(api);
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    expect((await outsider.post('/v1/sessions', { agent: agent.id })).status).toBe(404);
    expect((await outsider.post('/v1/sessions', { agent: 'agent_absent' })).status).toBe(404);
    const clientId = uniqueId('client-sessions-');
    const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId, clientId));
    const session = await site.post('/v1/sessions', { agent: agent.id });
    expect(session.status).toBe(201);
    const { rows } = await api.deps.db.query('SELECT client_id, project_id FROM sessions WHERE id = $1', [session.body.id]);
    expect(rows[0]).toEqual({ client_id: clientId, project_id: tenant.projectId });
  });

  test('owner_id is immutable: PATCH refuses it with 400 whatever the value, and changes nothing else in that request', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id, { owner_id: 'v1', title: 'kept' });
    for (const owner_id of ['v2', 'v1', null]) {
      const reply = await client.patch(`/v1/sessions/${session.id}`, { owner_id, title: 'changed' });
      expect(reply.status).toBe(400);
      expect(reply.body.error.message).toMatch(/^owner_id: is immutable/);
    }
    const read = await client.get(`/v1/sessions/${session.id}`);
    expect(read.body).toMatchObject({ owner_id: 'v1', title: 'kept', updated_at: null });
    const unowned = await createSession(client, agent.id);
    expect((await client.patch(`/v1/sessions/${unowned.id}`, { owner_id: 'late' })).status).toBe(400);
    expect((await client.get(`/v1/sessions/${unowned.id}`)).body).not.toHaveProperty('owner_id');
  });
});

describe('PATCH /v1/sessions/{id}', () => {
  test('title: set at 512 characters, 513 refused, null clears; the response is the session with its agent', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id, { title: 'first' });
    const set = await client.patch(`/v1/sessions/${session.id}`, { title: x(512, 'é') });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ ...session, title: x(512, 'é'), updated_at: set.body.updated_at });
    expect(Date.parse(set.body.updated_at)).not.toBeNaN();
    const over = await client.patch(`/v1/sessions/${session.id}`, { title: x(513) });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toMatch(/^title: must be at most 512 characters/);
    expect((await client.get(`/v1/sessions/${session.id}`)).body.title).toBe(x(512, 'é'));
    const cleared = await client.patch(`/v1/sessions/${session.id}`, { title: null });
    expect(cleared.body.title).toBeNull();
    expect((await client.patch(`/v1/sessions/${session.id}`, { title: 5 })).status).toBe(400);
  });

  test('metadata is a per-key patch: string sets, null deletes, omitted keys kept; title untouched', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id, { title: 'T', metadata: { a: '1', b: '2' } });
    const reply = await client.patch(`/v1/sessions/${session.id}`, { metadata: { a: null, b: 'changed', c: 'new', absent: null } });
    expect(reply.status).toBe(200);
    expect(reply.body.metadata).toEqual({ b: 'changed', c: 'new' });
    expect(reply.body.title).toBe('T');
    const listed = await client.get(`/v1/sessions?project_id=${agent.project_id}&metadata_key=c&metadata_value=new`);
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([session.id]);
  });

  test('metadata limits: 16 keys after the patch, key 64 and value 512 characters (at the bound accepted, past it 400)', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const meta = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    const session = await createSession(client, agent.id, { metadata: meta(15) });
    const patch = (metadata: unknown) => client.patch(`/v1/sessions/${session.id}`, { metadata });
    expect((await patch({ k15: 'v' })).status).toBe(200);
    const over = await patch({ k16: 'v' });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toBe('metadata: must have at most 16 keys after the update');
    expect((await patch({ k0: null, k16: 'v' })).status).toBe(200);
    expect((await patch({ [x(64)]: x(512) })).status).toBe(400); // a 17th key
    expect((await patch({ k1: null, [x(64)]: x(512) })).status).toBe(200);
    expect((await patch({ k2: x(513) })).body.error.message).toMatch(/^metadata\.k2/);
    expect((await patch({ [x(65)]: 'v' })).status).toBe(400);
    expect((await patch({ k2: 7 })).status).toBe(400);
    expect((await patch(['not', 'a', 'map'])).status).toBe(400);
    expect(Object.keys((await client.get(`/v1/sessions/${session.id}`)).body.metadata)).toHaveLength(16);
  });

  test('only title and metadata: any other field is 400 and nothing changes; an empty body changes nothing', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id, { title: 'T' });
    for (const body of [{ reasoning_effort: 'low' }, { agent: agent.id }, { status: 'terminated' }, { archived_at: null }, { title: 'x', usage: {} }]) {
      const reply = await client.patch(`/v1/sessions/${session.id}`, body);
      expect({ body, status: reply.status }).toEqual({ body, status: 400 });
    }
    const empty = await client.patch(`/v1/sessions/${session.id}`, {});
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual(session);
  });

  test('10 concurrent metadata patches: none is lost', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => client.patch(`/v1/sessions/${session.id}`, { metadata: { [`w${i}`]: 'x' } })));
    expect(replies.map((r) => r.status)).toEqual(Array(10).fill(200));
    const read = await client.get(`/v1/sessions/${session.id}`);
    expect(Object.keys(read.body.metadata).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `w${i}`).sort());
  });

  test('callers: another project and deleted sessions 404; a read-only key 403; a site token of the account may patch', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    const foreign = await outsider.patch(`/v1/sessions/${session.id}`, { title: 'x' });
    const absent = await outsider.patch('/v1/sessions/sesn_absent', { title: 'x' });
    expect(foreign.status).toBe(404);
    expect({ ...foreign.body.error, request_id: '' }).toEqual({ ...absent.body.error, request_id: '' });
    const reader = apiClient(api, (await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'read_only' })).key);
    expect((await reader.patch(`/v1/sessions/${session.id}`, { title: 'x' })).status).toBe(403);
    const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId));
    expect((await site.patch(`/v1/sessions/${session.id}`, { title: 'by site' })).body.title).toBe('by site');
    expect((await client.get(`/v1/sessions/${session.id}`)).body.title).toBe('by site');
    expect((await client.delete(`/v1/sessions/${session.id}`)).status).toBe(204);
    expect((await client.patch(`/v1/sessions/${session.id}`, { title: 'x' })).status).toBe(404);
  });
});

describe('GET /v1/sessions/{id}, archive, delete', () => {
  test('another project gets 404 identical to an absent session', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    const foreign = await outsider.get(`/v1/sessions/${session.id}`);
    const absent = await outsider.get('/v1/sessions/sesn_absent');
    expect(foreign.status).toBe(404);
    expect({ ...foreign.body.error, request_id: '' }).toEqual({ ...absent.body.error, request_id: '' });
    expect((await outsider.post(`/v1/sessions/${session.id}/archive`)).status).toBe(404);
    expect((await outsider.post(`/v1/sessions/${session.id}/unarchive`)).status).toBe(404);
    expect((await outsider.delete(`/v1/sessions/${session.id}`)).status).toBe(404);
  });

  test('a malformed path id (a NUL, a slash-free oddity, an overlong id) is 404 like an absent one, on every session and agent route', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const absent = await client.get('/v1/sessions/sesn_absent');
    for (const id of ['%00sesn', 'sesn%20x', 'x'.repeat(200)]) {
      const read = await client.get(`/v1/sessions/${id}`);
      expect(read.status).toBe(404);
      expect({ ...read.body.error, request_id: '' }).toEqual({ ...absent.body.error, request_id: '' });
      expect((await client.get(`/v1/sessions/${id}/events`)).status).toBe(404);
      expect((await client.post(`/v1/sessions/${id}/events`, { events: [{ type: 'user.interrupt', content: [] }] })).status).toBe(404);
      expect((await client.get(`/v1beta1/sessions/${id}/events/stream`)).status).toBe(404);
      expect((await client.get(`/v1/agents/${id}`)).status).toBe(404);
    }
    expect((await client.get(`/v1/agents/${agent.id}`)).status).toBe(200);
    // Authentication comes first: without a credential a malformed id is 401, like any other.
    for (const route of ['/v1/sessions/%00sesn', '/v1/agents/%00agent', '/v1/sessions/%00sesn/events', '/v1/kb/collections/%00kbc']) {
      expect((await fetch(`${api.url}${route}`)).status).toBe(401);
    }
  });

  test('archive sets archived_at (idempotent); delete is soft and hides the session', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const archived = await client.post(`/v1/sessions/${session.id}/archive`);
    expect(archived.status).toBe(200);
    expect(Date.parse(archived.body.archived_at)).not.toBeNaN();
    expect((await client.post(`/v1/sessions/${session.id}/archive`)).body.archived_at).toBe(archived.body.archived_at);
    expect((await client.delete(`/v1/sessions/${session.id}`)).status).toBe(204);
    expect((await client.get(`/v1/sessions/${session.id}`)).status).toBe(404);
    expect((await client.get(`/v1/sessions/${session.id}/events`)).status).toBe(404);
    const { rows } = await api.deps.db.query('SELECT status, deleted_at FROM sessions WHERE id = $1', [session.id]);
    expect(rows[0].status).toBe('terminated');
    expect(rows[0].deleted_at).toBeInstanceOf(Date);
  });
});

describe('deletes racing other writes', () => {
  test('concurrent DELETEs of one session: exactly one 204, the others 404 as after it', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => client.delete(`/v1/sessions/${session.id}`)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 204)).toHaveLength(1);
    expect(statuses.filter((s) => s === 404)).toHaveLength(5);
  });

  test('a session create that meets an agent delete in progress waits for it and answers 404', async () => {
    const { client, agent } = await tenantWithAgent(api);
    // Hold the agent's row as its DELETE does, then commit the delete while the create waits.
    const holder = await api.deps.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM agents WHERE id = $1 FOR UPDATE', [agent.id]);
      const create = client.post('/v1/sessions', { agent: agent.id });
      await new Promise((r) => setTimeout(r, 300));
      await holder.query('UPDATE agents SET deleted_at = now() WHERE id = $1', [agent.id]);
      await holder.query('COMMIT');
      const created = await create;
      expect(created.status).toBe(404);
      expect(created.body.error.type).toBe('not_found_error');
    } finally {
      holder.release();
    }
    const { rows } = await api.deps.db.query('SELECT count(*)::int AS n FROM sessions WHERE agent_id = $1', [agent.id]);
    expect(rows[0].n).toBe(0);
  });

  test("a deleted agent: its version stays; its sessions stay readable, refuse new messages (409) and still take interrupts", async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    expect((await client.delete(`/v1/agents/${agent.id}`)).status).toBe(204);
    const read = await client.get(`/v1/sessions/${session.id}`);
    expect(read.status).toBe(200);
    expect(read.body.agent).toMatchObject({ id: agent.id, version: agent.version });
    const message = await client.post(`/v1/sessions/${session.id}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello?' }] }] });
    expect(message.status).toBe(409);
    expect(message.body.error).toMatchObject({ type: 'conflict_error', message: "the session's agent was deleted: it starts no new runs" });
    expect((await client.post(`/v1/sessions/${session.id}/events`, { events: [{ type: 'user.interrupt' }] })).status).toBe(200);
    expect((await client.get(`/v1/sessions/${session.id}/events`)).body.data.map((e: { type: string }) => e.type)).toEqual(['user.interrupt']);
  });
});

describe('unarchive', () => {
  test('unarchive clears archived_at and returns the session to the default listing; both directions are idempotent', async () => {
    const { client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const list = async (extra = '') =>
      ((await client.get(`/v1/sessions?project_id=${agent.project_id}&agent_id=${agent.id}${extra}`)).body.data as Array<{ id: string }>).map((s) => s.id);
    const notArchived = await client.post(`/v1/sessions/${session.id}/unarchive`);
    expect(notArchived.status).toBe(200);
    expect(notArchived.body).toEqual(session); // nothing changed, not even updated_at
    const archived = await client.post(`/v1/sessions/${session.id}/archive`);
    expect(await list()).toEqual([]);
    expect(await list('&include_archived=true')).toEqual([session.id]);
    const again = await client.post(`/v1/sessions/${session.id}/archive`);
    expect(again.body).toEqual(archived.body);
    const unarchived = await client.post(`/v1/sessions/${session.id}/unarchive`);
    expect(unarchived.status).toBe(200);
    expect(unarchived.body.archived_at).toBeNull();
    expect(Date.parse(unarchived.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(archived.body.updated_at));
    expect(await list()).toEqual([session.id]);
    expect((await client.post(`/v1/sessions/${session.id}/unarchive`)).body).toEqual(unarchived.body);
  });

  test('an archived session can still be patched; a deleted one cannot be unarchived; a read-only key gets 403', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    await client.post(`/v1/sessions/${session.id}/archive`);
    const patched = await client.patch(`/v1/sessions/${session.id}`, { title: 'archived but renamed' });
    expect(patched.status).toBe(200);
    expect(patched.body.archived_at).not.toBeNull();
    const reader = apiClient(api, (await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'read_only' })).key);
    expect((await reader.post(`/v1/sessions/${session.id}/unarchive`)).status).toBe(403);
    expect((await client.delete(`/v1/sessions/${session.id}`)).status).toBe(204);
    expect((await client.post(`/v1/sessions/${session.id}/unarchive`)).status).toBe(404);
    const { rows } = await api.deps.db.query('SELECT archived_at FROM sessions WHERE id = $1', [session.id]);
    expect(rows[0].archived_at).toBeInstanceOf(Date);
  });
});

describe('GET /v1/sessions', () => {
  async function walk(client: ReturnType<typeof apiClient>, query: string, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let page: string | null = null;
    do {
      const reply = await client.get(`/v1/sessions?${query}&limit=${limit}${page ? `&page=${encodeURIComponent(page)}` : ''}`);
      expect(reply.status).toBe(200);
      expect(reply.body.data.length).toBeLessThanOrEqual(limit);
      seen.push(...reply.body.data.map((s: { id: string }) => s.id));
      page = reply.body.next_page;
    } while (page);
    return seen;
  }

  test('filters: agent_id, metadata_key+metadata_value (only together), include_archived; deleted never listed', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    const other = await createAgent(client, tenant.projectId);
    const a = await createSession(client, agent.id, { metadata: { channel: 'web' } });
    const b = await createSession(client, other.id, { metadata: { channel: 'app' } });
    const c = await createSession(client, agent.id);
    const d = await createSession(client, agent.id);
    await client.post(`/v1/sessions/${c.id}/archive`);
    await client.delete(`/v1/sessions/${d.id}`);
    const p = `project_id=${tenant.projectId}`;
    expect(await walk(client, p, 20)).toEqual([b.id, a.id]);
    expect(await walk(client, `${p}&include_archived=true`, 20)).toEqual([c.id, b.id, a.id]);
    expect(await walk(client, `${p}&agent_id=${agent.id}`, 20)).toEqual([a.id]);
    expect(await walk(client, `${p}&metadata_key=channel&metadata_value=app`, 20)).toEqual([b.id]);
    expect((await client.get(`/v1/sessions?${p}&metadata_key=channel`)).status).toBe(400);
    expect((await client.get(`/v1/sessions?${p}&metadata_value=app`)).status).toBe(400);
  });

  test('project_id is required and must be authorized; limit 1..100 (default 20); bad cursors 400', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    for (let i = 0; i < 21; i++) await createSession(client, agent.id);
    expect((await client.get('/v1/sessions')).status).toBe(400);
    const other = await createTenant(api.deps.db);
    expect((await client.get(`/v1/sessions?project_id=${other.projectId}`)).status).toBe(403);
    const first = await client.get(`/v1/sessions?project_id=${tenant.projectId}`);
    expect(first.body.data).toHaveLength(20);
    expect(first.body.next_page).toEqual(expect.any(String));
    expect((await client.get(`/v1/sessions?project_id=${tenant.projectId}&limit=100`)).body.data).toHaveLength(21);
    expect((await client.get(`/v1/sessions?project_id=${tenant.projectId}&limit=101`)).status).toBe(400);
    expect((await client.get(`/v1/sessions?project_id=${tenant.projectId}&limit=0`)).status).toBe(400);
    expect((await client.get(`/v1/sessions?project_id=${tenant.projectId}&page=nonsense`)).status).toBe(400);
    // A cursor of another project's listing is refused, not silently reused.
    const otherClient = apiClient(api, other.key);
    const otherAgent = await createAgent(otherClient, other.projectId);
    await createSession(otherClient, otherAgent.id);
    await createSession(otherClient, otherAgent.id);
    const foreignCursor = (await otherClient.get(`/v1/sessions?project_id=${other.projectId}&limit=1`)).body.next_page;
    expect((await client.get(`/v1/sessions?project_id=${tenant.projectId}&page=${foreignCursor}`)).status).toBe(400);
  });

  test('a key scoped to another project cannot list; a site token of the account can', async () => {
    const { tenant, agent, client } = await tenantWithAgent(api);
    await createSession(client, agent.id);
    const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId));
    expect((await site.get(`/v1/sessions?project_id=${tenant.projectId}`)).body.data).toHaveLength(1);
    const noScope = apiClient(api, (await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'restricted', scopes: { agents: 'write' } })).key);
    expect((await noScope.get(`/v1/sessions?project_id=${tenant.projectId}`)).status).toBe(403);
  });

  test('paging while 20 writers create sessions concurrently: no duplicate and no gap among the sessions that existed', async () => {
    const { tenant, client, agent } = await tenantWithAgent(api);
    const before: string[] = [];
    for (let i = 0; i < 45; i++) before.push((await createSession(client, agent.id)).id);
    let writing = true;
    const created: string[] = [];
    const writers = Array.from({ length: 20 }, async () => {
      while (writing) created.push((await createSession(client, agent.id)).id);
    });
    const seen = await walk(client, `project_id=${tenant.projectId}`, 7);
    writing = false;
    await Promise.all(writers);
    expect(created.length).toBeGreaterThan(0);
    expect(new Set(seen).size).toBe(seen.length);
    // Newest first: sessions created during the walk appear only before the cursor; every older one is seen in order.
    const olderSeen = seen.filter((id) => before.includes(id));
    expect(olderSeen).toEqual([...before].reverse());
  });
});
