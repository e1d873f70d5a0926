import { startApi, type TestApi } from '../../support/harness';
import { createKey, createServiceToken, createSiblingProject, createTenant, type Tenant } from '../../support/factories';
import { apiClient, createAgent, createCollection, createSession, NARROW_TEMPERATURE_MODEL, PLAIN_MODEL, TOOLS_MODEL, TUNABLE_MODEL, type ApiClient } from '../sessions/support';
import { lockWaiters } from '../../support/lock-waiters';

let api: TestApi;
let tenant: Tenant;
let client: ApiClient;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '5000' });
  tenant = await createTenant(api.deps.db);
  client = apiClient(api, tenant.key);
});
afterAll(() => api.close());

// A model accepting both a temperature and a reasoning_effort, so every field can be set.
const full = () => ({
  model: TUNABLE_MODEL,
  description: 'desc',
  system_prompt: 'prompt',
  temperature: 1,
  max_tokens: 100,
  reasoning_effort: 'high',
  scopes: ['chat'],
  settings: { disable_kb_rag: true },
  mcp_servers: [{ url: 'https://a' }],
  tools: [{ name: 'a' }],
  skills: [{ id: 's' }],
  metadata: { a: '1', b: '2' },
});
const patch = (id: string, body: unknown, headers?: Record<string, string>) => client.patch(`/v1/agents/${id}`, body, headers);

describe('PATCH /v1/agents/{id}: field classes', () => {
  test('omitted fields are unchanged; the version increases and updated_at is set', async () => {
    const agent = await createAgent(client, tenant.projectId, full());
    const reply = await patch(agent.id, { name: 'Renamed' });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ ...agent, name: 'Renamed', version: 2, updated_at: reply.body.updated_at });
    expect(reply.body.updated_at).not.toBeNull();
    expect(reply.headers.get('etag')).toBe('"2"');
  });

  test('a patch that changes nothing (empty, or every value as it is) is no new version', async () => {
    const agent = await createAgent(client, tenant.projectId, full());
    for (const body of [{}, { name: agent.name, temperature: 1, metadata: { a: '1' }, tools: [{ name: 'a' }], settings: { disable_kb_rag: true } }]) {
      const reply = await patch(agent.id, body, { 'if-match': '"1"' });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual(agent);
      expect(reply.headers.get('etag')).toBe('"1"');
    }
    expect((await client.get(`/v1/agents/${agent.id}`)).body).toEqual(agent);
    expect((await patch(agent.id, { temperature: 0.5 })).body.version).toBe(2);
  });

  test.each(['name', 'model', 'project_id'])('%s cannot be cleared', async (field) => {
    const agent = await createAgent(client, tenant.projectId);
    const reply = await patch(agent.id, { [field]: null });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(new RegExp(`^${field}: ${field} cannot be cleared`));
    expect((await patch(agent.id, { name: '' })).status).toBe(400);
  });

  test.each(['description', 'system_prompt', 'temperature', 'max_tokens', 'reasoning_effort'])('%s clears with null', async (field) => {
    const agent = await createAgent(client, tenant.projectId, full());
    const reply = await patch(agent.id, { [field]: null });
    expect(reply.status).toBe(200);
    expect(reply.body).not.toHaveProperty(field);
  });

  test.each(['description', 'system_prompt'])('%s also clears with an empty string', async (field) => {
    const agent = await createAgent(client, tenant.projectId, full());
    const reply = await patch(agent.id, { [field]: '' });
    expect(reply.body).not.toHaveProperty(field);
  });

  test.each([
    ['scopes', null, []],
    ['scopes', [], []],
    ['settings', null, {}],
    ['settings', {}, {}],
  ])('%s clears with %j', async (field, value, shown) => {
    const agent = await createAgent(client, tenant.projectId, full());
    const reply = await patch(agent.id, { [field]: value });
    expect(reply.status).toBe(200);
    expect(reply.body[field]).toEqual(shown);
    const { rows } = await api.deps.db.query(`SELECT ${field} AS v FROM agents WHERE id = $1`, [agent.id]);
    expect(rows[0].v).toBeNull();
  });

  test.each(['mcp_servers', 'tools', 'skills'])('%s is replaced whole; [] and null clear', async (field) => {
    const agent = await createAgent(client, tenant.projectId, full());
    const replacement = field === 'tools' ? [{ name: 'z1' }, { type: 'echo', name: 'z2' }] : [{ replaced: true }];
    expect((await patch(agent.id, { [field]: replacement })).body[field]).toEqual(replacement);
    expect((await patch(agent.id, { [field]: [] })).body[field]).toEqual([]);
    await patch(agent.id, { [field]: replacement });
    expect((await patch(agent.id, { [field]: null })).body[field]).toEqual([]);
  });

  test('metadata is a per-key patch: string sets, null deletes, omitted keys kept', async () => {
    const agent = await createAgent(client, tenant.projectId, full());
    const reply = await patch(agent.id, { metadata: { a: null, b: 'changed', c: 'new' } });
    expect(reply.body.metadata).toEqual({ b: 'changed', c: 'new' });
  });

  test('metadata: at most 16 keys after the patch; key and value limits; reserved keys', async () => {
    const agent = await createAgent(client, tenant.projectId, { metadata: Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, 'v'])) });
    expect((await patch(agent.id, { metadata: { k15: 'v' } })).status).toBe(200);
    const over = await patch(agent.id, { metadata: { k16: 'v' } });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toMatch(/16 keys/);
    expect((await patch(agent.id, { metadata: { k0: null, k16: 'v' } })).status).toBe(200);
    expect((await patch(agent.id, { metadata: { k1: 'x'.repeat(512) } })).status).toBe(200);
    expect((await patch(agent.id, { metadata: { k1: 'x'.repeat(513) } })).status).toBe(400);
    expect((await patch(agent.id, { metadata: { ['x'.repeat(65)]: null } })).status).toBe(400);
    expect((await patch(agent.id, { metadata: { settings: 'x' } })).status).toBe(400);
  });

  test('every create limit applies to PATCH too', async () => {
    const agent = await createAgent(client, tenant.projectId, { model: PLAIN_MODEL });
    for (const body of [{ name: 'x'.repeat(256) }, { description: 'x'.repeat(4097) }, { temperature: 2.5 }, { max_tokens: 0 }, { tools: [{ name: 'a' }, { name: 'a' }] }, { scopes: ['nope'] }, { bogus: 1 }]) {
      expect({ body, status: (await patch(agent.id, body)).status }).toEqual({ body, status: 400 });
    }
    expect((await patch(agent.id, { name: 'x'.repeat(255), description: 'x'.repeat(4096), temperature: 2, max_tokens: 1 })).status).toBe(200);
  });

  test('model change: needs the tools capability and clears a reasoning_effort the new model does not accept', async () => {
    const agent = await createAgent(client, tenant.projectId, { reasoning_effort: 'minimal' });
    expect((await patch(agent.id, { model: 'openai/gpt-4o-search-preview' })).status).toBe(400);
    const kept = await patch(agent.id, { model: 'openai/gpt-5' });
    expect(kept.body.reasoning_effort).toBe('minimal');
    const cleared = await patch(agent.id, { model: 'anthropic/claude-sonnet-4-5' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).not.toHaveProperty('reasoning_effort');
    const explicit = await patch(agent.id, { model: PLAIN_MODEL, reasoning_effort: 'low' });
    expect(explicit.status).toBe(400);
    const both = await patch(agent.id, { model: TOOLS_MODEL, reasoning_effort: 'low' });
    expect(both.body).toMatchObject({ model: TOOLS_MODEL, reasoning_effort: 'low' });
  });

  test('reasoning_effort is checked against the stored model when only it changes', async () => {
    const agent = await createAgent(client, tenant.projectId, { model: PLAIN_MODEL });
    expect((await patch(agent.id, { reasoning_effort: 'low' })).status).toBe(400);
  });
});

describe('PATCH temperature against the model catalog', () => {
  test("a temperature sent alone is checked against the stored model's range, at and past the bound", async () => {
    const narrow = await createAgent(client, tenant.projectId, { model: NARROW_TEMPERATURE_MODEL });
    expect((await patch(narrow.id, { temperature: 1 })).body.temperature).toBe(1);
    const past = await patch(narrow.id, { temperature: 1.01 });
    expect(past.status).toBe(400);
    expect(past.body.error.message).toMatch(/^temperature: must be between 0 and 1 for model 'anthropic\/claude-haiku-4-5'/);
    expect((await client.get(`/v1/agents/${narrow.id}`)).body.temperature).toBe(1);
    const none = await createAgent(client, tenant.projectId, { model: TOOLS_MODEL });
    const refused = await patch(none.id, { temperature: 0 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^temperature: model 'openai\/gpt-5-mini' does not support temperature/);
  });

  test('a model change keeps a stored temperature the new model accepts and clears one it does not', async () => {
    const agent = await createAgent(client, tenant.projectId, { model: PLAIN_MODEL, temperature: 1 });
    const kept = await patch(agent.id, { model: NARROW_TEMPERATURE_MODEL }); // 1 is the top of 0..1
    expect(kept.status).toBe(200);
    expect(kept.body.temperature).toBe(1);
    await patch(agent.id, { model: PLAIN_MODEL, temperature: 1.5 });
    const outOfRange = await patch(agent.id, { model: NARROW_TEMPERATURE_MODEL });
    expect(outOfRange.status).toBe(200);
    expect(outOfRange.body).not.toHaveProperty('temperature');
    await patch(agent.id, { model: PLAIN_MODEL, temperature: 0 });
    const unsupported = await patch(agent.id, { model: TOOLS_MODEL });
    expect(unsupported.status).toBe(200);
    expect(unsupported.body).not.toHaveProperty('temperature');
    const { rows } = await api.deps.db.query('SELECT temperature FROM agents WHERE id = $1', [agent.id]);
    expect(rows[0].temperature).toBeNull();
  });

  test('a model change with a temperature in the same request validates that temperature (400, nothing changes)', async () => {
    const agent = await createAgent(client, tenant.projectId, { model: PLAIN_MODEL, temperature: 1.5 });
    const tooHigh = await patch(agent.id, { model: NARROW_TEMPERATURE_MODEL, temperature: 1.5 });
    expect(tooHigh.status).toBe(400);
    expect(tooHigh.body.error.message).toMatch(/^temperature/);
    expect((await patch(agent.id, { model: TOOLS_MODEL, temperature: 1 })).status).toBe(400);
    const unchanged = await client.get(`/v1/agents/${agent.id}`);
    expect(unchanged.body).toMatchObject({ model: PLAIN_MODEL, temperature: 1.5, version: 1 });
    expect((await patch(agent.id, { model: NARROW_TEMPERATURE_MODEL, temperature: 0.5 })).body).toMatchObject({ model: NARROW_TEMPERATURE_MODEL, temperature: 0.5 });
    expect((await patch(agent.id, { model: TOOLS_MODEL, temperature: null })).body).not.toHaveProperty('temperature');
  });

  test('an update leaves omitted fields as stored, even ones the catalog would now refuse', async () => {
    const agent = await createAgent(client, tenant.projectId, { model: TOOLS_MODEL });
    // Stored before the catalog check (or before the catalog changed): a temperature its model refuses.
    await api.deps.db.query('UPDATE agents SET temperature = 0.7, reasoning_effort = $2 WHERE id = $1', [agent.id, 'no-such-effort']);
    const renamed = await patch(agent.id, { name: 'renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'renamed', temperature: 0.7, reasoning_effort: 'no-such-effort' });
    // A field the request sends is checked; so are the fields a model change affects.
    expect((await patch(agent.id, { reasoning_effort: 'no-such-effort' })).status).toBe(400);
    const switched = await patch(agent.id, { model: PLAIN_MODEL });
    expect(switched.status).toBe(200);
    expect(switched.body).toMatchObject({ model: PLAIN_MODEL, temperature: 0.7 });
    expect(switched.body).not.toHaveProperty('reasoning_effort');
  });
});

describe('PATCH knowledge_base collections', () => {
  const kb = (name: string, id: string) => ({ type: 'knowledge_base', name, collection_id: id });

  test("replacement tools must name collections of the agent's project (400 naming tools.N.collection_id; nothing changes)", async () => {
    const collection = await createCollection(client);
    const agent = await createAgent(client, tenant.projectId, { tools: [kb('docs', collection)] });
    const bad = await patch(agent.id, { tools: [{ name: 'x' }, kb('docs', collection), kb('more', 'kbc_absent')] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^tools\.2\.collection_id: no knowledge-base collection 'kbc_absent'/);
    expect((await client.get(`/v1/agents/${agent.id}`)).body).toMatchObject({ version: 1, tools: [kb('docs', collection)] });
    const other = await createCollection(client);
    const ok = await patch(agent.id, { tools: [kb('docs', collection), kb('more', other)] });
    expect(ok.status).toBe(200);
    expect(ok.body.tools).toEqual([kb('docs', collection), kb('more', other)]);
  });

  test('a PATCH that touches neither tools nor project_id does not re-check the stored collections', async () => {
    const collection = await createCollection(client);
    const agent = await createAgent(client, tenant.projectId, { tools: [kb('docs', collection)] });
    await api.deps.db.query('DELETE FROM kb_collections WHERE id = $1', [collection]);
    expect((await patch(agent.id, { name: 'still editable' })).status).toBe(200);
    expect((await patch(agent.id, { tools: [kb('docs', collection)] })).status).toBe(400);
  });

  test("moving an agent while one of its sessions is being written (its row updated twice, as an event append does) completes both, no deadlock", async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    const site = apiClient(api, token);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    const agent = await createAgent(client, tenant.projectId);
    const session = await createSession(client, agent.id);
    const writer = await api.deps.db.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('UPDATE sessions SET updated_at = now() WHERE id = $1', [session.id]);
      const moved = site.patch(`/v1/agents/${agent.id}`, { project_id: sibling });
      // The move holds the agent and waits for the session's row...
      await lockWaiters(api.deps.db, 'UPDATE sessions SET project_id%');
      // ...while the writer's second update of that row checks its agent key (a key-share lock).
      await writer.query('UPDATE sessions SET updated_at = now() WHERE id = $1', [session.id]);
      await writer.query('COMMIT');
      expect((await moved).status).toBe(200);
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      writer.release();
    }
  });

  test('project reassignment re-checks the kept tools against the new project, and new tools too', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    const site = apiClient(api, token);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    const here = await createCollection(client);
    const there = await createCollection(site, sibling);
    const agent = await createAgent(client, tenant.projectId, { tools: [{ name: 'plain' }, kb('docs', here)] });
    const kept = await site.patch(`/v1/agents/${agent.id}`, { project_id: sibling });
    expect(kept.status).toBe(400);
    expect(kept.body.error.message).toBe(`tools.1.collection_id: no knowledge-base collection '${here}' in project '${sibling}'`);
    expect((await client.get(`/v1/agents/${agent.id}`)).body).toMatchObject({ project_id: tenant.projectId, version: 1 });
    const stale = await site.patch(`/v1/agents/${agent.id}`, { project_id: sibling, tools: [kb('docs', here)] });
    expect(stale.status).toBe(400);
    expect(stale.body.error.message).toMatch(/^tools\.0\.collection_id/);
    const moved = await site.patch(`/v1/agents/${agent.id}`, { project_id: sibling, tools: [kb('docs', there)] });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ project_id: sibling, tools: [kb('docs', there)] });
    // Back again: the sibling's collection is not in the original project.
    const back = await site.patch(`/v1/agents/${agent.id}`, { project_id: tenant.projectId });
    expect(back.status).toBe(400);
    expect(back.body.error.message).toMatch(/^tools\.0\.collection_id/);
  });

  test('a caller not authorized for the new project gets 403 before any collection is looked at', async () => {
    const agent = await createAgent(client, tenant.projectId, { tools: [kb('docs', await createCollection(client))] });
    const other = await createTenant(api.deps.db);
    expect((await patch(agent.id, { project_id: other.projectId })).status).toBe(403);
  });
});

describe('project reassignment', () => {
  test('an API key cannot move an agent to another project (403); a site token of the account can, and sessions follow', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    const site = apiClient(api, token);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    const agent = await createAgent(client, tenant.projectId);
    const session = await createSession(client, agent.id);
    expect((await patch(agent.id, { project_id: sibling })).status).toBe(403);
    const other = await createTenant(api.deps.db);
    expect((await site.patch(`/v1/agents/${agent.id}`, { project_id: other.projectId })).status).toBe(403);
    const moved = await site.patch(`/v1/agents/${agent.id}`, { project_id: sibling });
    expect(moved.status).toBe(200);
    expect(moved.body.project_id).toBe(sibling);
    // The session's project is its agent's: the old project's key no longer sees either.
    expect((await client.get(`/v1/agents/${agent.id}`)).status).toBe(404);
    expect((await client.get(`/v1/sessions/${session.id}`)).status).toBe(404);
    const siblingKey = apiClient(api, (await createKey(api.deps.db, { projectId: sibling, preset: 'all' })).key);
    expect((await siblingKey.get(`/v1/sessions/${session.id}`)).status).toBe(200);
  });
});

describe('concurrency: If-Match and the row lock', () => {
  test('If-Match with the current version succeeds; a stale one is 409 and changes nothing', async () => {
    const agent = await createAgent(client, tenant.projectId);
    expect((await patch(agent.id, { name: 'v2' }, { 'if-match': '"1"' })).status).toBe(200);
    const stale = await patch(agent.id, { name: 'lost' }, { 'if-match': '"1"' });
    expect(stale.status).toBe(409);
    expect(stale.body.error.type).toBe('conflict_error');
    expect((await client.get(`/v1/agents/${agent.id}`)).body.name).toBe('v2');
    expect((await patch(agent.id, { name: 'v3' }, { 'if-match': 'W/"2"' })).status).toBe(200);
    expect((await patch(agent.id, { name: 'v4' }, { 'if-match': '*' })).status).toBe(200);
  });

  test('10 concurrent PATCHes with the same If-Match: exactly one wins, the rest get 409', async () => {
    const agent = await createAgent(client, tenant.projectId);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => patch(agent.id, { metadata: { [`w${i}`]: 'x' } }, { 'if-match': '"1"' })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(9);
  });

  test('10 concurrent metadata PATCHes without If-Match: none is lost', async () => {
    const agent = await createAgent(client, tenant.projectId);
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => patch(agent.id, { metadata: { [`w${i}`]: 'x' } })));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const read = await client.get(`/v1/agents/${agent.id}`);
    expect(Object.keys(read.body.metadata).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `w${i}`).sort());
    expect(read.body.version).toBe(11);
  });
});

describe('read, list, delete, cross-project', () => {
  test('another project answers 404 exactly like an absent agent, for GET, PATCH and DELETE', async () => {
    const agent = await createAgent(client, tenant.projectId);
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    const foreign = await outsider.get(`/v1/agents/${agent.id}`);
    const absent = await outsider.get('/v1/agents/agent_doesnotexist0000000000');
    expect(foreign.status).toBe(404);
    expect(absent.status).toBe(404);
    expect({ ...foreign.body.error, request_id: 'x' }).toEqual({ ...absent.body.error, request_id: 'x' });
    expect((await outsider.patch(`/v1/agents/${agent.id}`, { name: 'x' })).status).toBe(404);
    expect((await outsider.delete(`/v1/agents/${agent.id}`)).status).toBe(404);
    expect((await client.get(`/v1/agents/${agent.id}`)).body.name).toBe('Helper');
  });

  test('GET /v1/agents lists a project newest first in keyset pages without duplicates', async () => {
    const own = await createTenant(api.deps.db);
    const owner = apiClient(api, own.key);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createAgent(owner, own.projectId, { name: `a${i}` })).id);
    const seen: string[] = [];
    let page: string | null = null;
    do {
      const reply: { status: number; body: { data: Array<{ id: string }>; next_page: string | null } } = await owner.get(
        `/v1/agents?project_id=${own.projectId}&limit=3${page ? `&page=${page}` : ''}`,
      );
      expect(reply.status).toBe(200);
      seen.push(...reply.body.data.map((a) => a.id));
      page = reply.body.next_page;
    } while (page);
    expect(seen).toEqual([...ids].reverse());
    expect((await owner.get(`/v1/agents?project_id=${tenant.projectId}`)).status).toBe(403);
    expect((await owner.get(`/v1/agents`)).status).toBe(400);
    expect((await owner.get(`/v1/agents?project_id=${own.projectId}&page=garbage`)).status).toBe(400);
    expect((await owner.get(`/v1/agents?project_id=${own.projectId}&limit=101`)).status).toBe(400);
  });

  test('DELETE removes the agent (then 404) and new sessions cannot use it', async () => {
    const agent = await createAgent(client, tenant.projectId);
    expect((await client.delete(`/v1/agents/${agent.id}`, { 'if-match': '"7"' })).status).toBe(409);
    expect((await client.delete(`/v1/agents/${agent.id}`)).status).toBe(204);
    expect((await client.get(`/v1/agents/${agent.id}`)).status).toBe(404);
    expect((await client.post('/v1/sessions', { agent: agent.id })).status).toBe(404);
    expect((await client.delete(`/v1/agents/${agent.id}`)).status).toBe(404);
  });
});
