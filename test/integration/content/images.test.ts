import OpenAI from 'openai';
import { createKey } from '../../support/factories';
import { expectError, json, postJson, simRequestsTo, startGatewayEnv, usageRowFor, withEmptyBalance, type GatewayEnv } from './support';

let env: GatewayEnv;
beforeAll(async () => {
  env = await startGatewayEnv({ MODERATION_BLOCKLIST: 'forbidden-word' });
});
afterAll(() => env.close());

const PNG_SIGNATURE = '89504e470d0a1a0a';
const isPng = (base64: string) => Buffer.from(base64, 'base64').subarray(0, 8).toString('hex') === PNG_SIGNATURE;

describe('POST /v1/images/generations (OpenAI images shape)', () => {
  const post = (body: unknown, key?: string) => postJson(env, '/v1/images/generations', body, key);

  test('default model gpt-image-1: b64 PNGs, OpenAI response fields, metered by its token usage', async () => {
    const since = env.sim.requests.length;
    const response = await post({ prompt: 'a lighthouse at dusk', n: 2, quality: 'low', size: '1024x1536' });
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body).toMatchObject({ created: expect.any(Number), output_format: 'png', quality: 'low', size: '1024x1536' });
    expect(body.data).toHaveLength(2);
    for (const image of body.data) expect(isPng(image.b64_json)).toBe(true);
    expect(body.data[0].b64_json).not.toBe(body.data[1].b64_json);
    expect(body.usage).toMatchObject({ output_tokens: 2 * 408 });
    expect(simRequestsTo(env, '/images/generations', since)[0]!.body).toMatchObject({ model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 2 });

    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ model: 'openai/gpt-image-1', operation: 'image', output_tokens: String(2 * 408) });
    // 5 USD/M text input, 40 USD/M image output = 500,000 and 4,000,000 nano-credits per token.
    expect(Number(row.credits_nano)).toBe(Number(row.input_tokens) * 500_000 + 816 * 4_000_000);
  });

  test('dall-e-3: url answers that resolve to a PNG, metered per image by quality and size', async () => {
    const response = await post({ model: 'openai/dall-e-3', prompt: 'a red fox', quality: 'hd', size: '1792x1024' });
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.data[0]).toMatchObject({ url: expect.stringMatching(/^http/), revised_prompt: expect.stringContaining('a red fox') });
    const image = await fetch(body.data[0].url);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await image.arrayBuffer()).subarray(0, 8).toString('hex')).toBe(PNG_SIGNATURE);
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ model: 'openai/dall-e-3', operation: 'image', credits_nano: String(12_000_000_000) }); // 0.12 USD

    const b64 = await json(await post({ model: 'openai/dall-e-3', prompt: 'a red fox', response_format: 'b64_json' }));
    expect(isPng(b64.data[0].b64_json)).toBe(true);
  });

  test.each([
    ['prompt missing', {}, 'prompt'],
    ['empty prompt', { prompt: ' ' }, 'prompt'],
    ['n above 10', { prompt: 'p', n: 11 }, 'n'],
    ['n not an integer', { prompt: 'p', n: 1.5 }, 'n'],
    ['n above 1 on dall-e-3', { prompt: 'p', model: 'openai/dall-e-3', n: 2 }, 'n'],
    ['a size gpt-image-1 does not make', { prompt: 'p', size: '1792x1024' }, 'size'],
    ['an unknown size', { prompt: 'p', size: '10x10' }, 'size'],
    ['a dall-e-3 quality on gpt-image-1', { prompt: 'p', quality: 'hd' }, 'quality'],
    ['response_format on gpt-image-1', { prompt: 'p', response_format: 'url' }, 'response_format'],
    ['background on dall-e-3', { prompt: 'p', model: 'openai/dall-e-3', background: 'transparent' }, 'background'],
    ['a prompt over 4000 characters on dall-e-3', { prompt: 'x'.repeat(4001), model: 'openai/dall-e-3' }, 'prompt'],
    ['output_compression above 100', { prompt: 'p', output_compression: 101 }, 'output_compression'],
    ['a chat model', { prompt: 'p', model: 'openai/gpt-4o' }, 'model'],
    ['an unknown field', { prompt: 'p', seed: 3 }, 'body'],
  ])('%s → 400 naming the field', async (_name, body, field) => {
    const error = await expectError(await post(body), 400, 'invalid_request_error');
    expect(error.message.startsWith(field)).toBe(true);
  });

  test('unknown model 404; moderation 403 without an upstream call; upstream errors pass through', async () => {
    await expectError(await post({ prompt: 'p', model: 'openai/dall-e-9' }), 404, 'not_found_error');
    const since = env.sim.requests.length;
    await expectError(await post({ prompt: 'a forbidden-word poster' }), 403, 'content_policy_violation');
    expect(env.sim.requests.length).toBe(since);
    const failed = await post({ prompt: 'boom [[error:500]]' });
    expect(failed.status).toBe(500);
    expect((await json(failed)).error.type).toBe('server_error');
  });

  test('scope image:write: 403 naming it; 402 on an empty balance', async () => {
    const { key } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { chat: 'write', speech: 'write' } });
    expect((await expectError(await post({ prompt: 'p' }, key), 403, 'permission_error')).message).toContain('image:write');
    await withEmptyBalance(env, async () => {
      await expectError(await post({ prompt: 'p' }), 402, 'insufficient_credits');
    });
  });
});

describe('the official openai client', () => {
  test('images.generate and audio.speech.create work against the gateway', async () => {
    const client = new OpenAI({ apiKey: env.tenant.key, baseURL: `${env.api.url}/v1`, maxRetries: 0 });
    const image = await client.images.generate({ model: 'openai/gpt-image-1', prompt: 'a blue square', quality: 'low' });
    expect(isPng(image.data![0]!.b64_json!)).toBe(true);
    // Fields the SDK types `T | null` may come as null; `stream: false` is taken too.
    const nulls = await client.images.generate({ model: 'openai/dall-e-3', prompt: 'a red square', n: null, quality: null, size: null, style: null, response_format: null, stream: false });
    expect(nulls.data![0]!.url).toMatch(/\.png$/);
    const speech = await client.audio.speech.create({ model: 'openai/tts-1', voice: 'echo', input: 'hello', response_format: 'wav' });
    expect(Buffer.from(await speech.arrayBuffer()).toString('ascii', 0, 4)).toBe('RIFF');
  });
});

describe('POST /v1/images/alt-text', () => {
  const post = (body: unknown, key?: string) => postJson(env, '/v1/images/alt-text', body, key);
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

  test('base64 image on the default vision model: {alt_text, model}, the image sent as a data URL, metered as alt_text', async () => {
    const since = env.sim.requests.length;
    const response = await post({ image_base64: png, mime_type: 'image/png', context: 'A blog post about pixels' });
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body).toEqual({ alt_text: `A simulated image (image/png, ${Buffer.from(png, 'base64').length} bytes)`, model: 'openai/gpt-4o-mini' });
    const sent = simRequestsTo(env, '/chat/completions', since)[0]!.body as { messages: Array<{ role: string; content: unknown }> };
    const user = sent.messages.find((m) => m.role === 'user')!.content as Array<{ type: string; image_url?: { url: string }; text?: string }>;
    expect(user[0]!.image_url!.url).toBe(`data:image/png;base64,${png}`);
    expect(user[1]!.text).toContain('A blog post about pixels');
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ model: 'openai/gpt-4o-mini', operation: 'alt_text' });
    expect(Number(row.credits_nano)).toBe(Number(row.input_tokens) * 15_000 + Number(row.output_tokens) * 60_000);
  });

  test('an image over 20 MiB decoded is 413, as image_base64 or as a data: URL, however far over', async () => {
    const over = Buffer.alloc(20 * 1024 * 1024 + 100).toString('base64');
    for (const body of [{ image_base64: over, mime_type: 'image/png' }, { image_url: `data:image/png;base64,${over}` }]) {
      const response = await post(body);
      expect(response.status).toBe(413);
      expect((await json(response)).error.type).toBe('request_too_large');
    }
  });

  test('an https URL goes upstream as is; a data URL is accepted; max_length cuts at a word', async () => {
    const response = await post({ image_url: 'https://example.com/cat.jpg', model: 'anthropic/claude-haiku-4-5' });
    expect(response.status).toBe(200);
    expect((await json(response)).model).toBe('anthropic/claude-haiku-4-5');
    const viaData = await json(await post({ image_url: `data:image/png;base64,${png}`, max_length: 20 }));
    expect(viaData.alt_text).toBe('A simulated image');
  });

  test.each([
    ['no image', {}, 'image_url'],
    ['both image forms', { image_url: 'https://example.com/a.png', image_base64: png }, 'image_url'],
    ['a non-http URL', { image_url: 'ftp://example.com/a.png' }, 'image_url'],
    ['invalid base64', { image_base64: 'not base64!' }, 'image_base64'],
    ['a data: URL that is not base64', { image_url: 'data:image/png;base64,@@@@ not base64 %%%' }, 'image_url'],
    ['an empty data: URL', { image_url: 'data:image/png;base64,' }, 'image_url'],
    ['an unsupported image type', { image_base64: png, mime_type: 'image/tiff' }, 'mime_type'],
    ['mime_type with a URL', { image_url: 'https://example.com/a.png', mime_type: 'image/png' }, 'mime_type'],
    ['a language that is not ISO 639-1', { image_base64: png, language: 'english' }, 'language'],
    ['max_length too small', { image_base64: png, max_length: 3 }, 'max_length'],
    ['a model without vision', { image_base64: png, model: 'openai/gpt-4' }, 'model'],
    ['an unknown field', { image_base64: png, detail: 'high' }, 'body'],
  ])('%s → 400 naming the field', async (_name, body, field) => {
    const error = await expectError(await post(body), 400, 'invalid_request_error');
    expect(error.message.startsWith(field)).toBe(true);
  });

  test('scope image:write: 403 naming it; moderation of the context; 402 on an empty balance', async () => {
    const { key } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { chat: 'write' } });
    expect((await expectError(await post({ image_base64: png }, key), 403, 'permission_error')).message).toContain('image:write');
    await expectError(await post({ image_base64: png, context: 'about a forbidden-word' }), 403, 'content_policy_violation');
    await withEmptyBalance(env, async () => {
      await expectError(await post({ image_base64: png }), 402, 'insufficient_credits');
    });
  });
});
