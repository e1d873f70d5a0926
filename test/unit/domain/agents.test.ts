import { applyAgentPatch, AgentPatchSchema, modelRuleError, type AgentFields } from '../../../src/domain/agents';

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
  test('catalog rules', () => {
    expect(modelRuleError({ model: 'openai/gpt-4o-search-preview', reasoning_effort: null, max_tokens: null })?.param).toBe('model');
    expect(modelRuleError({ model: 'openai/gpt-4.1', reasoning_effort: 'low', max_tokens: null })?.param).toBe('reasoning_effort');
    expect(modelRuleError({ model: 'openai/gpt-4.1', reasoning_effort: null, max_tokens: 10 ** 6 })?.param).toBe('max_tokens');
    expect(modelRuleError({ model: 'openai/gpt-4.1', reasoning_effort: null, max_tokens: 10 })).toBeUndefined();
  });
});
