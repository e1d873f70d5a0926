import { CATALOG_MAX_OUTPUT_TOKENS } from '../../../src/providers/catalog';
import { startApi, type TestApi } from '../../support/harness';
import { createKey, createServiceToken, createSiblingProject, createTenant, type Tenant } from '../../support/factories';
import { agentBody, apiClient, createCollection, NARROW_TEMPERATURE_MODEL, PLAIN_MODEL, TOOLS_MODEL, TUNABLE_MODEL, type ApiClient } from '../sessions/support';

let api: TestApi;
let tenant: Tenant;
let client: ApiClient;
/** A knowledge-base collection of the tenant's project. */
let collection: string;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '5000' });
  tenant = await createTenant(api.deps.db);
  client = apiClient(api, tenant.key);
  collection = await createCollection(client);
});
afterAll(() => api.close());

const create = (overrides: Record<string, unknown>) => client.post('/v1/agents', agentBody(tenant.projectId, overrides));
const expect400 = async (overrides: Record<string, unknown>, param?: RegExp) => {
  const reply = await create(overrides);
  expect(reply.status).toBe(400);
  expect(reply.body.error.type).toBe('invalid_request_error');
  if (param) expect(reply.body.error.message).toMatch(param);
};
const x = (n: number, ch = 'a') => ch.repeat(n);
const obj = (keys: number) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 'v']));

describe('POST /v1/agents: every field round-trips', () => {
  test('a full agent is created and returned exactly as sent', async () => {
    const body = agentBody(tenant.projectId, {
      name: 'Support bot',
      model: TUNABLE_MODEL,
      description: 'Answers questions',
      system_prompt: 'Be brief.',
      temperature: 0.7,
      max_tokens: 4096,
      reasoning_effort: 'low',
      scopes: ['chat', 'search'],
      settings: { disable_kb_rag: true },
      mcp_servers: [{ url: 'https://mcp.example/sse', anything: { nested: 1 } }],
      tools: [
        { type: 'custom', name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, label: 'weather', defer_loading: true },
        { name: 'no_type_given', input_schema: { type: 'object' } },
        { type: 'knowledge_base', name: 'docs', collection_id: collection, filters: { type: ['post'], language: ['en'], metadata: { tier: ['gold'] }, created_at: { gte: '2024-01-01T00:00:00Z' }, uri: null } },
        { type: 'echo', name: 'echo_1' },
        { type: 'random_number', name: 'dice' },
      ],
      skills: [{ id: 'skill-1', free: ['form'] }],
      metadata: { team: 'support' },
    });
    const reply = await client.post('/v1/agents', body);
    expect(reply.status).toBe(201);
    const agent = reply.body;
    expect(agent).toMatchObject({ ...body, type: 'agent', version: 1, updated_at: null });
    expect(agent.id).toMatch(/^agent_[0-9A-Za-z]{22}$/);
    expect(Date.parse(agent.created_at)).not.toBeNaN();
    expect(reply.headers.get('etag')).toBe('"1"');
    const read = await client.get(`/v1/agents/${agent.id}`);
    expect(read.body).toEqual(agent);
  });

  test('open objects keep the key order they were sent in (a tool schema\'s properties are the order providers generate arguments in)', async () => {
    const schema = { type: 'object', properties: { reasoning: { type: 'string' }, answer: { type: 'string' }, b: { type: 'number' } }, required: ['reasoning', 'answer'] };
    const body = agentBody(tenant.projectId, {
      tools: [{ type: 'custom', name: 't', input_schema: schema }],
      settings: { alpha: 1, b: 2 },
      skills: [{ zz: 1, a: 2 }],
      mcp_servers: [{ url: 'https://mcp.example', a: 1 }],
      metadata: { zeta: '1', alpha: '2' },
    });
    const created = await client.post('/v1/agents', body);
    for (const agent of [created.body, (await client.get(`/v1/agents/${created.body.id}`)).body]) {
      expect(Object.keys(agent.tools[0].input_schema.properties)).toEqual(['reasoning', 'answer', 'b']);
      expect(Object.keys(agent.tools[0].input_schema)).toEqual(['type', 'properties', 'required']);
      expect(Object.keys(agent.settings)).toEqual(['alpha', 'b']);
      expect(Object.keys(agent.skills[0])).toEqual(['zz', 'a']);
      expect(Object.keys(agent.mcp_servers[0])).toEqual(['url', 'a']);
      expect(Object.keys(agent.metadata)).toEqual(['zeta', 'alpha']);
    }
  });

  test('unset optional scalars are omitted in responses (max_tokens included)', async () => {
    const reply = await create({});
    expect(reply.status).toBe(201);
    for (const field of ['description', 'system_prompt', 'temperature', 'max_tokens', 'reasoning_effort']) expect(reply.body).not.toHaveProperty(field);
    expect(reply.body).toMatchObject({ scopes: [], settings: {}, tools: [], mcp_servers: [], skills: [], metadata: {} });
  });

  test('an empty description or system_prompt is unset, as in a PATCH (which then changes nothing)', async () => {
    const reply = await create({ description: '', system_prompt: '' });
    expect(reply.status).toBe(201);
    expect(reply.body).not.toHaveProperty('description');
    expect(reply.body).not.toHaveProperty('system_prompt');
    const patched = await client.patch(`/v1/agents/${reply.body.id}`, { description: '', system_prompt: '' });
    expect(patched.body.version).toBe(reply.body.version);
  });

  test('unknown fields and missing required fields are 400 naming the field', async () => {
    await expect400({ colour: 'blue' }, /colour/);
    const missing = await client.post('/v1/agents', { project_id: tenant.projectId, model: TOOLS_MODEL });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/^name/);
    const noProject = await client.post('/v1/agents', { name: 'a', model: TOOLS_MODEL });
    expect(noProject.status).toBe(400);
    expect(noProject.body.error.message).toMatch(/^project_id/);
  });
});

describe('limits: at the bound accepted, one past it 400', () => {
  test.each([
    ['name', 255],
    ['description', 4096],
    ['system_prompt', 32768],
  ])('%s: %i characters', async (field, max) => {
    expect((await create({ [field]: x(max) })).status).toBe(201);
    await expect400({ [field]: x(max + 1) }, new RegExp(field));
  });

  test('lengths count characters, not UTF-16 units: 255 emoji make a valid name', async () => {
    expect((await create({ name: x(255, '😀') })).status).toBe(201);
    await expect400({ name: x(256, '😀') }, /name/);
  });

  test('name must not be empty', async () => {
    await expect400({ name: '' }, /name/);
    await expect400({ name: '   ' }, /name/);
  });

  test('model: 255 characters is the length bound (then the catalog decides)', async () => {
    await expect400({ model: `openai/${x(248)}` }, /unknown model/);
    await expect400({ model: `openai/${x(249)}` }, /at most 255/);
  });

  test('model must be <provider>/<model-name>, in the catalog, with the tools capability', async () => {
    await expect400({ model: 'gpt-4o' }, /provider/);
    await expect400({ model: 'openai/not-a-model' }, /unknown model/);
    await expect400({ model: 'openai/gpt-image-1' }, /is a media model; agents need a chat model/);
    await expect400({ model: 'openai/gpt-4o-search-preview' }, /tools/);
  });

  test('temperature: 2 accepted, just above 2 and below 0 refused', async () => {
    expect((await create({ model: PLAIN_MODEL, temperature: 2 })).status).toBe(201);
    expect((await create({ model: PLAIN_MODEL, temperature: 0 })).status).toBe(201);
    await expect400({ model: PLAIN_MODEL, temperature: 2.0001 }, /^temperature: must be at most 2/);
    await expect400({ model: PLAIN_MODEL, temperature: -0.1 }, /^temperature: must be at least 0/);
    await expect400({ model: PLAIN_MODEL, temperature: '1' }, /^temperature/);
  });

  test("temperature: within the model's catalog range (claude-haiku-4-5: 0..1)", async () => {
    expect((await create({ model: NARROW_TEMPERATURE_MODEL, temperature: 1 })).body.temperature).toBe(1);
    expect((await create({ model: NARROW_TEMPERATURE_MODEL, temperature: 0 })).body.temperature).toBe(0);
    await expect400({ model: NARROW_TEMPERATURE_MODEL, temperature: 1.01 }, /^temperature: must be between 0 and 1 for model 'anthropic\/claude-haiku-4-5'/);
    await expect400({ model: NARROW_TEMPERATURE_MODEL, temperature: 2 }, /^temperature: must be between 0 and 1/);
  });

  test('temperature: a model without temperature support (gpt-5-mini) refuses any value, 0 included; null or omitted is fine', async () => {
    await expect400({ model: TOOLS_MODEL, temperature: 0 }, /^temperature: model 'openai\/gpt-5-mini' does not support temperature/);
    await expect400({ model: TOOLS_MODEL, temperature: 1 }, /does not support temperature/);
    const unset = await create({ model: TOOLS_MODEL, temperature: null });
    expect(unset.status).toBe(201);
    expect(unset.body).not.toHaveProperty('temperature');
  });

  test(`max_tokens: 1 and the catalog-wide maximum (${CATALOG_MAX_OUTPUT_TOKENS}) accepted; 0, above it, above 200000 and fractions refused`, async () => {
    expect((await create({ max_tokens: 1 })).body.max_tokens).toBe(1);
    expect((await create({ max_tokens: CATALOG_MAX_OUTPUT_TOKENS })).status).toBe(201);
    await expect400({ max_tokens: 0 }, /max_tokens/);
    await expect400({ max_tokens: CATALOG_MAX_OUTPUT_TOKENS + 1 }, /catalog-wide/);
    await expect400({ max_tokens: 200_001 }, /max_tokens/);
    await expect400({ max_tokens: 1.5 }, /max_tokens/);
  });

  test("reasoning_effort: from the model's enum; a model without an enum rejects any value", async () => {
    expect((await create({ reasoning_effort: 'minimal' })).status).toBe(201);
    await expect400({ reasoning_effort: 'extreme' }, /reasoning_effort.*one of/);
    await expect400({ model: PLAIN_MODEL, reasoning_effort: 'low' }, /accepts no reasoning_effort/);
    const empty = await create({ model: PLAIN_MODEL, reasoning_effort: '' });
    expect(empty.status).toBe(201);
    expect(empty.body).not.toHaveProperty('reasoning_effort');
  });

  test('scopes must be drawn from the site scopes', async () => {
    expect((await create({ scopes: ['chat', 'search'] })).status).toBe(201);
    await expect400({ scopes: ['root'] }, /scopes\.0/);
  });

  test('settings: 32 keys accepted, 33 refused', async () => {
    expect((await create({ settings: obj(32) })).status).toBe(201);
    await expect400({ settings: obj(33) }, /settings/);
  });

  test('settings: 4096 bytes serialized accepted, 4097 refused', async () => {
    const sized = (bytes: number) => ({ s: x(bytes - '{"s":""}'.length) });
    expect(JSON.stringify(sized(4096))).toHaveLength(4096);
    expect((await create({ settings: sized(4096) })).status).toBe(201);
    await expect400({ settings: sized(4097) }, /4096 bytes/);
    await expect400({ settings: ['not', 'an', 'object'] }, /settings/);
  });

  test.each([
    ['mcp_servers', 20],
    ['skills', 64],
  ])('%s: %i open objects accepted, one more refused', async (field, max) => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, any: { key: true } }));
    expect((await create({ [field]: items(max) })).status).toBe(201);
    await expect400({ [field]: items(max + 1) }, new RegExp(field));
    await expect400({ [field]: ['string'] }, new RegExp(field));
  });

  test('tools: 128 entries accepted, 129 refused', async () => {
    const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}` }));
    expect((await create({ tools: tools(128) })).status).toBe(201);
    await expect400({ tools: tools(129) }, /tools/);
  });

  test('metadata: 16 keys accepted, 17 refused; key 64 chars, value 512 chars', async () => {
    expect((await create({ metadata: obj(16) })).status).toBe(201);
    await expect400({ metadata: obj(17) }, /metadata/);
    expect((await create({ metadata: { [x(64)]: x(512) } })).status).toBe(201);
    await expect400({ metadata: { [x(65)]: 'v' } }, /metadata/);
    await expect400({ metadata: { k: x(513) } }, /metadata\.k/);
    await expect400({ metadata: { k: 1 } }, /metadata\.k/);
  });

  test.each(['scopes', 'settings'])('metadata key %s is reserved', async (key) => {
    await expect400({ metadata: { [key]: 'x' } }, /reserved/);
  });
});

describe('tool entries', () => {
  test('custom tool name: pattern ^[a-zA-Z0-9_-]{1,64}$, 64 accepted, 65 refused', async () => {
    expect((await create({ tools: [{ name: x(64) }] })).status).toBe(201);
    await expect400({ tools: [{ name: x(65) }] }, /tools\.0\.name/);
    await expect400({ tools: [{ name: 'has space' }] }, /tools\.0\.name/);
    await expect400({ tools: [{ name: '' }] }, /tools\.0\.name/);
    await expect400({ tools: [{ description: 'nameless' }] }, /tools\.0\.name/);
  });

  test('label: 64 characters accepted, 65 refused; defer_loading must be boolean', async () => {
    expect((await create({ tools: [{ name: 'a', label: x(64) }] })).status).toBe(201);
    await expect400({ tools: [{ name: 'a', label: x(65) }] }, /tools\.0\.label/);
    await expect400({ tools: [{ name: 'a', defer_loading: 'yes' }] }, /defer_loading/);
  });

  test('input_schema must be a valid JSON Schema object', async () => {
    expect((await create({ tools: [{ name: 'a', input_schema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] } }] })).status).toBe(201);
    await expect400({ tools: [{ name: 'a', input_schema: 'object' }] }, /input_schema/);
    await expect400({ tools: [{ name: 'a', input_schema: { type: 'object', properties: { n: { type: 'integer', minimum: 'one' } } } }] }, /input_schema.*JSON Schema/);
    await expect400({ tools: [{ name: 'a', input_schema: { type: 'string' } }] }, /input_schema.*object/);
    await expect400({ tools: [{ name: 'a', input_schema: { type: 'object', required: 'n' } }] }, /input_schema/);
  });

  test('type: custom is the only value for client tools; unknown types are refused', async () => {
    await expect400({ tools: [{ type: 'function', name: 'a' }] }, /tools\.0\.type/);
    await expect400({ tools: [{ type: 'custom', name: 'a', unknown_field: 1 }] }, /unknown_field/);
  });

  test('names (wire identifiers included) are unique across all entries', async () => {
    await expect400({ tools: [{ name: 'dup' }, { type: 'echo', name: 'dup' }] }, /duplicate tool name 'dup'/);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection }, { type: 'random_number', name: 'kb' }] }, /duplicate/);
  });

  test("no entry may take the name of a tool the gateway adds to the model's list", async () => {
    const kb = { type: 'knowledge_base', name: 'kb', collection_id: collection };
    await expect400({ tools: [kb, { name: `${collection}_search` }] }, /tools\.1\.name.*taken by a tool the gateway adds \(the knowledge_base entry 'kb'\)/);
    await expect400({ tools: [{ type: 'echo', name: `${collection}_fetch` }, kb] }, /tools\.0\.name/);
    await expect400({ tools: [{ name: 'later', defer_loading: true }, { name: 'search_tools' }] }, /the deferred-tool search/);
    // Without a deferred tool, search_tools is an ordinary name.
    expect((await create({ tools: [{ name: 'search_tools' }] })).status).toBe(201);
  });

  test('knowledge_base: collection_id required, one entry per collection, filter ceiling validated', async () => {
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb' }] }, /collection_id/);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'a', collection_id: collection }, { type: 'knowledge_base', name: 'b', collection_id: collection }] }, /already has/);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: { language: ['english'] } }] }, /ISO 639-1/);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: { language: ['qq'] } }] }, /ISO 639-1/);
    // Case-insensitive, as search filters are; kept lower-case.
    const upper = await create({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: { language: ['DE'] } }] });
    expect(upper.status).toBe(201);
    expect(upper.body.tools[0].filters.language).toEqual(['de']);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: { created_at: { gte: 'yesterday' } } }] }, /RFC 3339/);
    await expect400({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: { colour: ['red'] } }] }, /colour/);
    const ok = await create({ tools: [{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: null }] });
    expect(ok.status).toBe(201);
    expect(ok.body.tools).toEqual([{ type: 'knowledge_base', name: 'kb', collection_id: collection, filters: null }]);
  });

  test("knowledge_base: collection_id must name a collection of the agent's project, else 400 naming tools.N.collection_id", async () => {
    const second = await createCollection(client);
    const kb = (name: string, id: string) => ({ type: 'knowledge_base', name, collection_id: id });
    const both = await create({ tools: [{ name: 'custom' }, kb('a', collection), kb('b', second)] });
    expect(both.status).toBe(201);
    await expect400({ tools: [{ name: 'custom' }, kb('a', collection), kb('b', 'kbc_doesnotexist')] }, /^tools\.2\.collection_id: no knowledge-base collection 'kbc_doesnotexist'/);
    // A collection of another project (even one of the same account) reads exactly like an absent one.
    const otherProject = await createTenant(api.deps.db);
    const foreign = await createCollection(apiClient(api, otherProject.key));
    await expect400({ tools: [kb('a', foreign)] }, new RegExp(`^tools\\.0\\.collection_id: no knowledge-base collection '${foreign}' in project '${tenant.projectId}'$`));
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    const siblingCollection = await createCollection(apiClient(api, token), sibling);
    await expect400({ tools: [kb('a', siblingCollection)] }, /^tools\.0\.collection_id/);
    expect((await apiClient(api, token).post('/v1/agents', agentBody(sibling, { tools: [kb('a', siblingCollection)] }))).status).toBe(201);
    // Nothing was stored for the refused requests.
    const { rows } = await api.deps.db.query(`SELECT count(*)::int AS n FROM agents WHERE project_id = $1 AND tools::text LIKE '%kbc_doesnotexist%'`, [tenant.projectId]);
    expect(rows[0].n).toBe(0);
  });

  test('echo and random_number need their wire identifier', async () => {
    await expect400({ tools: [{ type: 'echo' }] }, /tools\.0\.name/);
    await expect400({ tools: [{ type: 'random_number', name: 'bad name' }] }, /tools\.0\.name/);
  });
});

describe('callers', () => {
  test("an API key of another project gets 403, even in the same account", async () => {
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    const reply = await client.post('/v1/agents', agentBody(sibling));
    expect(reply.status).toBe(403);
    expect(reply.body.error.type).toBe('permission_error');
  });

  test("a site service token may create in any project of its account, not in another account's", async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    const site = apiClient(api, token);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    expect((await site.post('/v1/agents', agentBody(sibling))).status).toBe(201);
    const other = await createTenant(api.deps.db);
    expect((await site.post('/v1/agents', agentBody(other.projectId))).status).toBe(403);
    expect((await site.post('/v1/agents', agentBody('proj_doesnotexist'))).status).toBe(403);
  });

  test("another account's agent and an absent one: the same 404 after the same database work", async () => {
    const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId));
    const other = await createTenant(api.deps.db);
    const foreign = (await apiClient(api, other.key).post('/v1/agents', agentBody(other.projectId))).body.id;
    const db = api.deps.db as unknown as { query: (...args: unknown[]) => unknown };
    const original = db.query;
    let queries = 0;
    db.query = function (this: unknown, ...args: unknown[]) {
      queries++;
      return original.apply(this, args);
    };
    const measure = async (id: string) => {
      queries = 0;
      const reply = await site.get(`/v1/agents/${id}`);
      return { status: reply.status, body: { ...reply.body, error: { ...reply.body.error, request_id: undefined } }, queries };
    };
    try {
      const absent = await measure('agent_doesnotexist000000');
      const theirs = await measure(foreign);
      expect(theirs).toEqual(absent);
      expect(absent.status).toBe(404);
    } finally {
      db.query = original;
    }
  });

  test('a key without agents:write gets 403; agents:read may read', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'read_only' });
    const reader = apiClient(api, key);
    const denied = await reader.post('/v1/agents', agentBody(tenant.projectId));
    expect(denied.status).toBe(403);
    expect(denied.body.error.message).toContain('agents:write');
    const agent = (await create({})).body;
    expect((await reader.get(`/v1/agents/${agent.id}`)).status).toBe(200);
  });

  test('no credential: 401', async () => {
    const response = await fetch(`${api.url}/v1/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
  });
});
