import { CATALOG_MAX_OUTPUT_TOKENS, computeCreditsNano, findModel, listModels } from '../../../src/providers/catalog';

describe('model catalog', () => {
  test('ids are <provider>/<name>, unique, and every price is a non-negative integer', () => {
    const ids = listModels().map((model) => model.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const model of listModels()) {
      expect(model.id).toBe(`${model.provider}/${model.name}`);
      const { long_context: long, ...flat } = model.pricing;
      for (const price of [...Object.values(flat), ...Object.values(long ?? {})]) {
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

  const none = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

  test('web searches are billed per search at the provider\'s fee (Anthropic 0.01 USD = 1 credit, Google 3.5 credits, OpenAI search models 2.5 credits)', () => {
    expect(computeCreditsNano(findModel('anthropic/claude-haiku-4-5')!, { ...none, web_search_requests: 3 })).toBe(3 * 1e9);
    expect(computeCreditsNano(findModel('google/gemini-2.5-flash')!, { ...none, web_search_requests: 1 })).toBe(3.5e9);
    expect(computeCreditsNano(findModel('openai/gpt-4o-search-preview')!, { ...none, web_search_requests: 1 })).toBe(2.5e9);
    // A model with no search fee charges none, whatever the usage says.
    expect(computeCreditsNano(findModel('openai/gpt-4o')!, { ...none, web_search_requests: 5 })).toBe(0);
  });

  test("Anthropic 1-hour cache writes cost twice the input price; the rest of the writes the 5-minute price", () => {
    const model = findModel('anthropic/claude-sonnet-4-5')!;
    const usage = { ...none, cache_creation_input_tokens: 1000, cache_creation_1h_input_tokens: 400 };
    expect(computeCreditsNano(model, usage)).toBe(600 * 375_000 + 400 * 600_000);
    // A count above the writes cannot bill more than the writes.
    expect(computeCreditsNano(model, { ...usage, cache_creation_1h_input_tokens: 5000 })).toBe(1000 * 600_000);
  });

  test('a prompt over 200k tokens bills the whole call at the long-context tier (Gemini 2.5 Pro); others stay flat', () => {
    const pro = findModel('google/gemini-2.5-pro')!;
    const at = { ...none, input_tokens: 150_000, cache_read_input_tokens: 50_000, output_tokens: 1000 };
    expect(computeCreditsNano(pro, at)).toBe(150_000 * 125_000 + 50_000 * 12_500 + 1000 * 1_000_000);
    const over = { ...at, input_tokens: 150_001 };
    expect(computeCreditsNano(pro, over)).toBe(150_001 * 250_000 + 50_000 * 25_000 + 1000 * 1_500_000);
    // The catalog offers no tier a model's context window cannot reach.
    for (const model of listModels()) if (model.pricing.long_context) expect(model.context_window).toBeGreaterThan(model.pricing.long_context.above_tokens);
    const flash = findModel('google/gemini-2.5-flash')!;
    expect(computeCreditsNano(flash, { ...none, input_tokens: 300_000 })).toBe(300_000 * 30_000);
  });
});
