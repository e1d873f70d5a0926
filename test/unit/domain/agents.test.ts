import { applyAgentPatch, AgentPatchSchema, modelRuleError, temperatureError, type AgentFields } from '../../../src/domain/agents';
import { FilterCeilingSchema, knowledgeBaseCollections } from '../../../src/domain/agent-tool-entries';
import { applySessionPatch, SessionPatchSchema } from '../../../src/domain/sessions';

const base: AgentFields = {
  project_id: 'p',
  name: 'n',
  model: 'openai/gpt-5-mini',
  description: 'd',
  system_prompt: 's',
  temperature: null,
  max_tokens: 10,
  reasoning_effort: 'minimal',
  scopes: ['chat'],
  settings: { a: 1 },
  mcp_servers: [{}],
  tools: [{ name: 't' }],
  skills: [{}],
  metadata: { a: '1' },
};
const apply = (patch: unknown) => applyAgentPatch(base, AgentPatchSchema.parse(patch));

describe('applyAgentPatch', () => {
  test('empty string and empty collections clear to null', () => {
    const result = apply({ description: '', system_prompt: '', scopes: [], settings: {}, tools: [], skills: null, mcp_servers: [] });
    expect(result).toEqual({ fields: { ...base, description: null, system_prompt: null, scopes: null, settings: null, tools: null, skills: null, mcp_servers: null } });
  });

  test('metadata merges per key', () => {
    expect(apply({ metadata: { a: null, b: '2' } })).toEqual({ fields: { ...base, metadata: { b: '2' } } });
  });

  test('a model change drops a reasoning_effort the new model rejects, keeps one it accepts', () => {
    expect(apply({ model: 'anthropic/claude-haiku-4-5' })).toMatchObject({ fields: { reasoning_effort: null } });
    expect(apply({ model: 'openai/gpt-5' })).toMatchObject({ fields: { reasoning_effort: 'minimal' } });
    expect(apply({ model: 'openai/gpt-4.1', reasoning_effort: 'low' })).toMatchObject({ error: { param: 'reasoning_effort' } });
  });

  test('null cannot clear name, model or project_id', () => {
    for (const field of ['name', 'model', 'project_id']) expect(AgentPatchSchema.safeParse({ [field]: null }).success).toBe(false);
  });
});

describe('modelRuleError', () => {
  const rule = (fields: Partial<Parameters<typeof modelRuleError>[0]>) =>
    modelRuleError({ model: 'openai/gpt-4.1', temperature: null, reasoning_effort: null, max_tokens: null, ...fields });

  test('catalog rules', () => {
    expect(rule({ model: 'openai/gpt-4o-search-preview' })?.param).toBe('model');
    expect(rule({ reasoning_effort: 'low' })?.param).toBe('reasoning_effort');
    expect(rule({ max_tokens: 10 ** 6 })?.param).toBe('max_tokens');
    expect(rule({ max_tokens: 10 })).toBeUndefined();
  });

  test("temperature: inside the model's inclusive range; a model without support rejects any value, 0 included", () => {
    expect(rule({ temperature: 0 })).toBeUndefined();
    expect(rule({ temperature: 2 })).toBeUndefined();
    expect(rule({ model: 'anthropic/claude-haiku-4-5', temperature: 1 })).toBeUndefined();
    expect(rule({ model: 'anthropic/claude-haiku-4-5', temperature: 1.01 })).toEqual({
      param: 'temperature',
      message: "temperature: must be between 0 and 1 for model 'anthropic/claude-haiku-4-5'",
    });
    expect(rule({ model: 'openai/gpt-5-mini', temperature: 0 })?.param).toBe('temperature');
    expect(temperatureError('openai/gpt-5-mini', 1)).toMatch(/does not support temperature/);
    expect(temperatureError('openai/unknown', 1)).toMatch(/does not support temperature/);
  });
});

describe('temperature on PATCH', () => {
  const withTemperature = (model: string, temperature: number): AgentFields => ({ ...base, model, reasoning_effort: null, temperature });

  test('a model change clears a stored temperature the new model does not accept, keeps one it accepts', () => {
    const stored = withTemperature('openai/gpt-4.1', 1.5);
    const parse = (patch: unknown) => applyAgentPatch(stored, AgentPatchSchema.parse(patch));
    expect(parse({ model: 'google/gemini-2.5-pro' })).toMatchObject({ fields: { temperature: 1.5 } });
    expect(parse({ model: 'anthropic/claude-haiku-4-5' })).toMatchObject({ fields: { temperature: null } }); // out of 0..1
    expect(parse({ model: 'openai/gpt-5' })).toMatchObject({ fields: { temperature: null } }); // unsupported
    expect(applyAgentPatch(withTemperature('openai/gpt-4.1', 1), AgentPatchSchema.parse({ model: 'anthropic/claude-haiku-4-5' }))).toMatchObject({ fields: { temperature: 1 } });
  });

  test('a temperature sent with the request is validated, never cleared', () => {
    const stored = withTemperature('openai/gpt-4.1', 1.5);
    expect(applyAgentPatch(stored, AgentPatchSchema.parse({ model: 'openai/gpt-5', temperature: 1 }))).toMatchObject({ error: { param: 'temperature' } });
    expect(applyAgentPatch(stored, AgentPatchSchema.parse({ model: 'anthropic/claude-haiku-4-5', temperature: 1.5 }))).toMatchObject({ error: { param: 'temperature' } });
    expect(applyAgentPatch(stored, AgentPatchSchema.parse({ temperature: 0.5 }))).toMatchObject({ fields: { temperature: 0.5 } });
  });

  test('an update that does not touch the model rules leaves a stored temperature the model would now refuse as it is', () => {
    expect(applyAgentPatch(withTemperature('openai/gpt-5-mini', 0.7), AgentPatchSchema.parse({ name: 'x' }))).toMatchObject({ fields: { name: 'x', temperature: 0.7 } });
    expect(applyAgentPatch(withTemperature('openai/gpt-5-mini', 0.7), AgentPatchSchema.parse({ temperature: 0.5 }))).toMatchObject({ error: { param: 'temperature' } });
  });
});

describe('knowledgeBaseCollections', () => {
  test('lists the knowledge_base entries with their index in tools', () => {
    expect(
      knowledgeBaseCollections([
        { name: 'a' },
        { type: 'knowledge_base', name: 'kb1', collection_id: 'c1' },
        { type: 'echo', name: 'e' },
        { type: 'knowledge_base', name: 'kb2', collection_id: 'c2' },
      ]),
    ).toEqual([
      { index: 1, collectionId: 'c1' },
      { index: 3, collectionId: 'c2' },
    ]);
    expect(knowledgeBaseCollections(null)).toEqual([]);
  });
});

describe('knowledge_base filter ceiling', () => {
  test('dates are kept as sent (any RFC 3339 offset); values longer than any stored one are refused', () => {
    expect(FilterCeilingSchema.parse({ created_at: { gte: '2024-01-01T00:00:00+19:00' } })).toEqual({ created_at: { gte: '2024-01-01T00:00:00+19:00' } });
    expect(FilterCeilingSchema.safeParse({ modified_at: { lte: '9999-12-31T23:59:59-18:00' } }).success).toBe(false);
    expect(FilterCeilingSchema.safeParse({ uri: ['x'.repeat(2049)] }).success).toBe(false);
    expect(FilterCeilingSchema.safeParse({ metadata: { k: ['😀'.repeat(2048)] } }).success).toBe(true);
  });

  test('metadata keys follow the documents\' key rule (a dotted key could never match); an empty value, which documents may store, is allowed', () => {
    expect(FilterCeilingSchema.safeParse({ metadata: { 'a.b': ['x'] } }).success).toBe(false);
    expect(FilterCeilingSchema.safeParse({ metadata: { '-x': ['x'] } }).success).toBe(false);
    expect(FilterCeilingSchema.parse({ metadata: { 'wp:category': ['', 'news'] } })).toEqual({ metadata: { 'wp:category': ['', 'news'] } });
  });
});

describe('session PATCH', () => {
  test('title sets and clears; metadata merges per key with the 16-key limit on the result', () => {
    const current = { title: 't', metadata: { a: '1' } };
    expect(applySessionPatch(current, SessionPatchSchema.parse({ title: null, metadata: { a: null, b: '2' } }))).toEqual({ fields: { title: null, metadata: { b: '2' } } });
    expect(applySessionPatch(current, SessionPatchSchema.parse({}))).toEqual({ fields: current });
    const full = { title: null, metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'])) };
    expect(applySessionPatch(full, SessionPatchSchema.parse({ metadata: { k99: 'v' } }))).toMatchObject({ error: { param: 'metadata' } });
    expect(applySessionPatch(full, SessionPatchSchema.parse({ metadata: { k0: null, k99: 'v' } }))).toMatchObject({ fields: { metadata: { k99: 'v' } } });
  });

  test('owner_id is refused whatever its value; other fields are unknown', () => {
    for (const owner_id of ['v', null, '']) {
      const result = SessionPatchSchema.safeParse({ owner_id });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]).toMatchObject({ path: ['owner_id'], message: expect.stringMatching(/immutable/) });
    }
    expect(SessionPatchSchema.safeParse({ reasoning_effort: 'low' }).success).toBe(false);
    expect(SessionPatchSchema.safeParse({ agent: 'agent_x' }).success).toBe(false);
  });
});
