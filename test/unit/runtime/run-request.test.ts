import { runRequest } from '../../../activities/call-model';
import type { RunContext } from '../../../activities/run-context';
import { findModel } from '../../../src/providers/catalog';

const context = (model: string, efforts: { session: string | null; agent: string | null }): RunContext => ({
  session: { id: 'sess_1', project_id: 'proj_1', reasoning_effort: efforts.session, client_id: null, active_run_id: 'run_1', deleted_at: null },
  agent: { id: 'agent_1', model, system_prompt: null, temperature: null, max_tokens: null, reasoning_effort: efforts.agent, tools: null, settings: null },
  events: [],
  runCitations: [],
  balanceNano: 1n, othersUnbilledNano: 0n,
});
const effortOf = (model: string, efforts: { session: string | null; agent: string | null }) => runRequest(context(model, efforts), findModel(model)!).reasoning_effort;

describe('reasoning_effort of a run request', () => {
  test('the session override, then the agent, then none (the provider default)', () => {
    expect(effortOf('openai/gpt-5-mini', { session: 'minimal', agent: 'high' })).toBe('minimal');
    expect(effortOf('openai/gpt-5-mini', { session: null, agent: 'high' })).toBe('high');
    expect(effortOf('openai/gpt-5-mini', { session: null, agent: null })).toBeUndefined();
  });

  test("a session override the agent's current model does not accept is passed over", () => {
    // The agent moved from gpt-5-mini to gpt-4.1-mini after the session chose 'minimal'.
    expect(effortOf('openai/gpt-4.1-mini', { session: 'minimal', agent: null })).toBeUndefined();
    expect(effortOf('openai/gpt-5', { session: 'bogus', agent: 'low' })).toBe('low');
  });
});

describe('max_tokens of a run request', () => {
  const withCap = (model: string, maxTokens: number) => {
    const base = context(model, { session: null, agent: null });
    return runRequest({ ...base, agent: { ...base.agent, max_tokens: maxTokens } }, findModel(model)!).max_tokens;
  };

  test("the agent's cap, at most what its model can produce", () => {
    const haiku = findModel('anthropic/claude-3-5-haiku-latest')!;
    expect(withCap('anthropic/claude-3-5-haiku-latest', 100_000)).toBe(haiku.max_output_tokens);
    expect(withCap('anthropic/claude-3-5-haiku-latest', 500)).toBe(500);
  });
});
