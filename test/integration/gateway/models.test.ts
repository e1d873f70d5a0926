import { startApi, type TestApi } from '../../support/harness';
import { json } from '../../support/factories';
import { CATALOG_MAX_OUTPUT_TOKENS, listModels } from '../../../src/providers/catalog';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

describe('public model catalog', () => {
  test('GET /v1/models lists every catalog model without authentication', async () => {
    const response = await fetch(`${api.url}/v1/models`);
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(listModels().map((m) => m.id));
    expect(body.data.find((m: { id: string }) => m.id === 'openai/o3')).toMatchObject({
      object: 'model',
      created: Date.UTC(2025, 3, 16) / 1000, // the release day, in Unix seconds as OpenAI's `created`
      owned_by: 'openai',
      capabilities: expect.arrayContaining(['tools', 'reasoning']),
      parameters: {
        temperature: { supported: false },
        reasoning_effort: ['low', 'medium', 'high'],
        response_format_type: ['text', 'json_object', 'json_schema'],
        top_p: false,
        stop: false,
        temperature_or_top_p: false,
      },
      max_output_tokens: 100_000,
      context_window: 200_000,
      pricing: { unit: 'nano_credits_per_token', input: 200_000, output: 800_000 },
    });
  });

  test('both schema path forms give per-model ranges; unknown models 404', async () => {
    const byParts = await json(await fetch(`${api.url}/v1/models/anthropic/claude-haiku-4-5/schema`));
    const byId = await json(await fetch(`${api.url}/v1/models/${encodeURIComponent('anthropic/claude-haiku-4-5')}/schema`));
    expect(byParts).toEqual(byId);
    expect(byParts).toMatchObject({
      id: 'anthropic/claude-haiku-4-5',
      max_output_tokens: 64_000,
      catalog_max_output_tokens: CATALOG_MAX_OUTPUT_TOKENS,
      parameters: { properties: { temperature: { minimum: 0, maximum: 1 }, max_tokens: { minimum: 1, maximum: 64_000 }, reasoning_effort: { enum: ['low', 'medium', 'high'] } } },
    });
    const noTemperature = await json(await fetch(`${api.url}/v1/models/openai/gpt-5/schema`));
    expect(noTemperature.parameters.properties.temperature).toBeUndefined();
    // Nor top_p, nor stop sequences (OpenAI refuses them on its reasoning models).
    expect(noTemperature.parameters.properties).not.toHaveProperty('top_p');
    expect(noTemperature.parameters.properties).not.toHaveProperty('stop');
    expect(byParts.parameters.properties.top_p).toEqual({ type: 'number', minimum: 0, maximum: 1 });
    // A model that takes temperature or top_p, not both, says so.
    expect(byParts.parameters.not).toEqual({ required: ['temperature', 'top_p'] });
    expect((await json(await fetch(`${api.url}/v1/models/openai/gpt-4o/schema`))).parameters).not.toHaveProperty('not');
    expect((await fetch(`${api.url}/v1/models/openai/gpt-0/schema`)).status).toBe(404);
    // thinking_config only where the model reasons, as reasoning_effort (a request with it elsewhere is 400).
    const thinking = await json(await fetch(`${api.url}/v1/models/google/gemini-2.5-flash/schema`));
    expect(thinking.parameters.properties.provider_options.properties.thinking_config).toBeDefined();
    const plain = await json(await fetch(`${api.url}/v1/models/google/gemini-2.0-flash/schema`));
    expect(plain.parameters.properties.provider_options).toEqual({ type: 'object' });
  });

  test('the openai client can list models', async () => {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${api.url}/v1`, maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain('google/gemini-2.5-flash');
  });
});
