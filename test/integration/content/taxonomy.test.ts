import { createKey } from '../../support/factories';
import { expectError, json, postJson, simRequestsTo, startGatewayEnv, usageRowFor, withEmptyBalance, type GatewayEnv } from './support';

let env: GatewayEnv;
beforeAll(async () => {
  env = await startGatewayEnv({ MODERATION_BLOCKLIST: 'forbidden-word' });
});
afterAll(() => env.close());

const PATH = '/v1/content/suggest-taxonomy';
const base = {
  content: 'Rooftop solar panels and home batteries cut the energy bill of a family in Lyon.',
  categories: ['Energy', 'Finance', 'Sports', 'Home'],
  approved_tags: ['Solar', 'Renewables'],
  new_tag_confidence_threshold: 0.6,
};
const post = (body: unknown, key?: string) => postJson(env, PATH, body, key);

describe('suggest-taxonomy offline (default model, simulator structured output)', () => {
  test('the default model answers a schema-conforming suggestion; rules applied; model reported', async () => {
    const since = env.sim.requests.length;
    const response = await post(base);
    expect(response.status).toBe(200);
    const body = await json(response);
    // The simulator picks the listed categories the content mentions, and its keywords as tags
    // with confidences 0.9, 0.7, 0.5: "rooftop" (new, 0.9), "solar" (approved → existing, 0.7),
    // "panels" (new, 0.5 < 0.6 → dropped).
    expect(body).toEqual({
      categories: [
        { name: 'Energy', confidence: 0.9 },
        { name: 'Home', confidence: 0.7 },
      ],
      tags: [
        { tag: 'rooftop', confidence: 0.9, source: 'new' },
        { tag: 'Solar', confidence: 0.7, source: 'existing' },
      ],
      model: 'openai/gpt-4o-mini',
    });
    const [upstream] = simRequestsTo(env, '/chat/completions', since);
    const sent = upstream!.body as { model: string; response_format: { type: string; json_schema: { strict: boolean; schema: { properties: { categories: { items: { properties: { name: { enum: string[] } } } } } } } } };
    expect(sent.model).toBe('gpt-4o-mini');
    expect(sent.response_format.type).toBe('json_schema');
    expect(sent.response_format.json_schema.strict).toBe(true);
    expect(sent.response_format.json_schema.schema.properties.categories.items.properties.name.enum).toEqual(base.categories);
  });

  test('a google model with structured output works too', async () => {
    const response = await post({ ...base, model: 'google/gemini-2.5-flash-lite' });
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.model).toBe('google/gemini-2.5-flash-lite');
    expect(body.categories.map((c: { name: string }) => c.name)).toEqual(['Energy', 'Home']);
  });
});

describe('rules on the model answer', () => {
  // [[json:...]] makes the simulator answer exactly that JSON.
  const answer = (value: unknown) => `${base.content} [[json:${JSON.stringify(value)}]]`;

  test('categories outside the list are dropped, case-insensitive matches spelled as given, duplicates merged', async () => {
    const response = await post({
      ...base,
      content: answer({
        categories: [
          { name: 'energy', confidence: 0.4 },
          { name: 'Politics', confidence: 0.99 },
          { name: 'ENERGY', confidence: 0.8 },
          { name: 'Finance', confidence: 0.2 },
        ],
        tags: [],
      }),
    });
    expect(response.status).toBe(200);
    expect((await json(response)).categories).toEqual([
      { name: 'Energy', confidence: 0.8 },
      { name: 'Finance', confidence: 0.2 },
    ]);
  });

  test('an approved tag spelled with other whitespace still matches (as the answer is compared, runs of whitespace are one space)', async () => {
    const response = await post({
      ...base,
      approved_tags: ['Solar  Power', 'Wind\tFarm'],
      new_tag_confidence_threshold: 0.5,
      content: answer({ categories: [], tags: [{ tag: 'Solar  Power', confidence: 0.2 }, { tag: 'wind farm', confidence: 0.3 }] }),
    });
    expect(response.status).toBe(200);
    expect((await json(response)).tags).toEqual([
      { tag: 'Wind\tFarm', confidence: 0.3, source: 'existing' },
      { tag: 'Solar  Power', confidence: 0.2, source: 'existing' },
    ]);
  });

  test('tags: approved ones are existing (any confidence), new ones below the threshold dropped, at the threshold kept', async () => {
    const response = await post({
      ...base,
      new_tag_confidence_threshold: 0.5,
      content: answer({
        categories: [],
        tags: [
          { tag: 'renewables', confidence: 0.1 },
          { tag: 'heat pumps', confidence: 0.5 },
          { tag: 'lyon', confidence: 0.49 },
          { tag: '  Heat   Pumps ', confidence: 0.3 },
          { tag: 'SOLAR', confidence: 0.95 },
        ],
      }),
    });
    expect(response.status).toBe(200);
    expect((await json(response)).tags).toEqual([
      { tag: 'Solar', confidence: 0.95, source: 'existing' },
      { tag: 'heat pumps', confidence: 0.5, source: 'new' },
      { tag: 'Renewables', confidence: 0.1, source: 'existing' },
    ]);
  });

  test.each([
    ['a confidence above 1', { categories: [{ name: 'Energy', confidence: 1.5 }], tags: [] }],
    ['a missing tags list', { categories: [] }],
    ['a tag without confidence', { categories: [], tags: [{ tag: 'x' }] }],
    ['more tags than the schema allows (21)', { categories: [], tags: Array.from({ length: 21 }, (_, i) => ({ tag: `t${i}`, confidence: 0.9 })) }],
  ])('an answer with %s is refused as an upstream error (502) but still metered', async (_name, value) => {
    const response = await post({ ...base, content: answer(value) });
    const error = await expectError(response, 502, 'upstream_error');
    expect(error.message).toContain('taxonomy schema');
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row.operation).toBe('taxonomy');
  });

  test('an upstream provider error passes through with its status', async () => {
    const response = await post({ ...base, content: `${base.content} [[error:429]]` });
    expect(response.status).toBe(429);
    expect((await json(response)).error.type).toBe('rate_limit_exceeded');
  });
});

describe('validation', () => {
  test.each([
    ['content missing', { ...base, content: undefined }, 'content'],
    ['empty content', { ...base, content: '   ' }, 'content'],
    ['content too long', { ...base, content: 'a'.repeat(100_001) }, 'content'],
    ['categories missing', { ...base, categories: undefined }, 'categories'],
    ['empty categories', { ...base, categories: [] }, 'categories'],
    ['too many categories', { ...base, categories: Array.from({ length: 251 }, (_, i) => `c${i}`) }, 'categories'],
    ['a blank category', { ...base, categories: ['Energy', ' '] }, 'categories.1'],
    ['a category that is not a string', { ...base, categories: ['Energy', 3] }, 'categories.1'],
    ['threshold missing', { ...base, new_tag_confidence_threshold: undefined }, 'new_tag_confidence_threshold'],
    ['threshold above 1', { ...base, new_tag_confidence_threshold: 1.01 }, 'new_tag_confidence_threshold'],
    ['threshold below 0', { ...base, new_tag_confidence_threshold: -0.1 }, 'new_tag_confidence_threshold'],
    ['approved_tags not an array', { ...base, approved_tags: 'Solar' }, 'approved_tags'],
    ['context too long', { ...base, context: 'x'.repeat(4_001) }, 'context'],
    ['an unknown field', { ...base, temperature: 0.2 }, 'body'],
    ['a model without structured output', { ...base, model: 'anthropic/claude-haiku-4-5' }, 'model'],
    ['a media model', { ...base, model: 'openai/tts-1' }, 'model'],
  ])('%s → 400 naming the field', async (_name, body, field) => {
    const response = await post(body);
    const error = await expectError(response, 400, 'invalid_request_error');
    expect(error.message.startsWith(field)).toBe(true);
  });

  test('every field at its limit, non-ASCII escaped as PHP writes JSON, fits the body limit', async () => {
    const emoji = (n: number) => '\u{1F33F}'.repeat(n);
    const body = {
      ...base,
      content: emoji(100_000),
      context: emoji(4_000),
      categories: Array.from({ length: 250 }, () => emoji(100)),
      approved_tags: Array.from({ length: 1_000 }, () => emoji(100)),
    };
    // Every non-ASCII character as a \\uXXXX escape (a pair for an emoji): PHP's json_encode default.
    const escaped = JSON.stringify(body).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect(escaped.length).toBeGreaterThan(2 * 1024 * 1024);
    const response = await post(escaped);
    expect(response.status).not.toBe(413);
    expect(response.status).toBe(200);
  });

  test('an unknown model is 404; a non-JSON body 400', async () => {
    await expectError(await post({ ...base, model: 'openai/gpt-99' }), 404, 'not_found_error');
    await expectError(await post('{not json'), 400, 'invalid_request_error');
  });

  test('moderation blocks the content, the context and the categories before any upstream call', async () => {
    const since = env.sim.requests.length;
    for (const body of [
      { ...base, content: 'this has a forbidden-word in it' },
      { ...base, context: 'Forbidden-Word domain' },
      { ...base, categories: ['forbidden-word'] },
    ]) {
      await expectError(await post(body), 403, 'content_policy_violation');
    }
    expect(env.sim.requests.length).toBe(since);
  });
});

describe('scopes, credits, metering', () => {
  test('a key without chat:write gets 403 naming the scope; chat:write alone is enough', async () => {
    const { key: imageOnly } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { image: 'write', speech: 'write', transcribe: 'write' } });
    const refused = await expectError(await post(base, imageOnly), 403, 'permission_error');
    expect(refused.message).toContain('chat:write');
    const { key: readOnly } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'read_only' });
    expect((await expectError(await post(base, readOnly), 403, 'permission_error')).message).toContain('chat:write');
    const { key: chatOnly } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { chat: 'write' } });
    expect((await post(base, chatOnly)).status).toBe(200);
  });

  test('no credential → 401 with WWW-Authenticate', async () => {
    const response = await fetch(`${env.api.url}${PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(base) });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
  });

  test('an exhausted balance is 402 before any upstream call', async () => {
    await withEmptyBalance(env, async () => {
      const since = env.sim.requests.length;
      await expectError(await post(base), 402, 'insufficient_credits');
      expect(env.sim.requests.length).toBe(since);
    });
  });

  test('the usage row has operation taxonomy, the model, its tokens and exact credits', async () => {
    const response = await postJson(env, PATH, base, env.tenant.key, { 'x-application': 'svc-connector' });
    expect(response.status).toBe(200);
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ model: 'openai/gpt-4o-mini', operation: 'taxonomy', application: 'svc-connector', auth_method: 'api_key', project_id: env.tenant.projectId });
    expect(Number(row.input_tokens)).toBeGreaterThan(0);
    expect(Number(row.output_tokens)).toBeGreaterThan(0);
    // gpt-4o-mini: 0.15 / 0.60 USD per million tokens = 15,000 / 60,000 nano-credits per token.
    expect(Number(row.credits_nano)).toBe(Number(row.input_tokens) * 15_000 + Number(row.output_tokens) * 60_000);
  });
});
