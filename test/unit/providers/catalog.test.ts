import { CATALOG_MAX_OUTPUT_TOKENS, computeCreditsNano, findModel, listModels } from '../../../src/providers/catalog';

describe('model catalog', () => {
  test('ids are <provider>/<name>, unique, and every price is a non-negative integer', () => {
    const ids = listModels().map((model) => model.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const model of listModels()) {
      expect(model.id).toBe(`${model.provider}/${model.name}`);
      for (const price of Object.values(model.pricing)) {
        expect(Number.isInteger(price)).toBe(true);
        expect(price).toBeGreaterThanOrEqual(0);
      }
      expect(model.max_output_tokens).toBeLessThanOrEqual(model.context_window);
    }
  });

  test('covers the three providers and the special cases the rules need', () => {
    const models = listModels();
    expect(new Set(models.map((m) => m.provider))).toEqual(new Set(['openai', 'anthropic', 'google']));
    expect(models.some((m) => !m.capabilities.includes('tools'))).toBe(true);
    expect(models.some((m) => (m.parameters.reasoning_effort ?? []).length > 0)).toBe(true);
    expect(models.some((m) => m.context_window <= 8192 && m.capabilities.includes('tools'))).toBe(true);
    expect(models.some((m) => m.capabilities.includes('web_search'))).toBe(true);
    expect(models.some((m) => m.parameters.temperature?.supported === false)).toBe(true);
  });

  test('published prices at 1 credit = 0.01 USD: gpt-4o input 2.50 USD/M = 250,000 nano per token', () => {
    expect(findModel('openai/gpt-4o')!.pricing).toEqual({ input: 250_000, output: 1_000_000, cache_read: 125_000, cache_write: 250_000 });
    expect(findModel('anthropic/claude-opus-4-1')!.pricing.cache_write).toBe(1_875_000); // 18.75 USD/M
  });

  test('CATALOG_MAX_OUTPUT_TOKENS is the largest per-model ceiling', () => {
    expect(CATALOG_MAX_OUTPUT_TOKENS).toBe(Math.max(...listModels().map((m) => m.max_output_tokens)));
    expect(findModel('nope/nothing')).toBeUndefined();
  });

  test('credits are exact integer sums over the four token kinds', () => {
    const model = findModel('anthropic/claude-sonnet-4-5')!;
    const usage = { input_tokens: 1000, output_tokens: 500, cache_read_input_tokens: 2000, cache_creation_input_tokens: 300 };
    expect(computeCreditsNano(model, usage)).toBe(1000 * 300_000 + 500 * 1_500_000 + 2000 * 30_000 + 300 * 375_000);
    // A million output tokens of Opus is 75 USD = 7,500 credits.
    expect(computeCreditsNano(findModel('anthropic/claude-opus-4-1')!, { input_tokens: 0, output_tokens: 1_000_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 })).toBe(7_500 * 1e9);
  });
});
