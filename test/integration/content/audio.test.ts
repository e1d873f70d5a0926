import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import OpenAI, { toFile } from 'openai';
import { bearer, createKey, createServiceToken } from '../../support/factories';
import { wavFile } from '../../../src/providers/simulator/media-files';
import { expectError, json, postJson, simRequestsTo, startGatewayEnv, usageRowFor, withEmptyBalance, type GatewayEnv } from './support';

let env: GatewayEnv;
beforeAll(async () => {
  env = await startGatewayEnv({ MODERATION_BLOCKLIST: 'forbidden-word' });
});
afterAll(() => env.close());

const MiB = 1024 * 1024;
/** A PCM WAV (24 kHz, 16-bit mono: 48,000 bytes per second) of exactly `bytes` bytes. */
const wavOfBytes = (bytes: number) => wavFile(Buffer.alloc(bytes - 44, 1));

describe('POST /v1/audio/speech (OpenAI speech shape)', () => {
  const post = (body: unknown, key?: string) => postJson(env, '/v1/audio/speech', body, key);
  const input = 'Hello from the gateway, thirty chars!!';

  test('default tts-1, mp3 by default: real MPEG frames, X-Model header, metered per character', async () => {
    const since = env.sim.requests.length;
    const response = await post({ input, voice: 'alloy' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(response.headers.get('x-model')).toBe('openai/tts-1');
    const audio = Buffer.from(await response.arrayBuffer());
    expect(audio.readUInt16BE(0) & 0xffe0).toBe(0xffe0); // MPEG frame sync
    expect(simRequestsTo(env, '/audio/speech', since)[0]!.body).toEqual({ model: 'tts-1', input, voice: 'alloy' });
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    // tts-1: 15 USD per million characters = 1,500,000 nano-credits per character.
    expect(row).toMatchObject({ model: 'openai/tts-1', operation: 'speech', credits_nano: String(input.length * 1_500_000) });
  });

  test('a client that hangs up mid-call is neither billed nor logged as a gateway error: the access log says 499', async () => {
    const controller = new AbortController();
    const logsBefore = env.api.logs.length;
    const call = fetch(`${env.api.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { ...bearer(env.tenant.key), 'content-type': 'application/json' },
      body: JSON.stringify({ input: '[[delay:2000]] hang up', voice: 'alloy' }),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    await expect(call).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const logged = env.api.logs.slice(logsBefore).map((line) => JSON.parse(line));
    const access = logged.find((l) => l.msg === 'request' && l.path === '/v1/audio/speech');
    expect(access).toMatchObject({ status: 499 });
    const lines = logged.filter((l) => l.request_id === access.request_id);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect((await env.api.deps.db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [access.request_id])).rowCount).toBe(0);
  });

  test('a credential bound to no project (a site token of a site without one) is 403 on every metered route, before its body is read', async () => {
    const token = await createServiceToken(env.api.deps.db, env.tenant.accountId, `no-project-${randomBytes(4).toString('hex')}`);
    for (const path of ['/v1/audio/speech', '/v1/audio/transcriptions', '/v1/images/generations', '/v1/images/alt-text', '/v1/content/suggest-taxonomy', '/v1/chat/completions', '/v1/messages']) {
      const response = await fetch(`${env.api.url}${path}`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{"not": "valid for any of them"' });
      expect([path, response.status]).toEqual([path, 403]);
      expect(JSON.stringify(await response.json())).toContain('not bound to a project');
    }
  });

  test('wav on tts-1-hd: a RIFF file whose length follows the input and the speed', async () => {
    const slow = await post({ model: 'openai/tts-1-hd', input, voice: 'nova', response_format: 'wav', speed: 0.5 });
    const fast = await post({ model: 'openai/tts-1-hd', input, voice: 'nova', response_format: 'wav', speed: 2 });
    expect(slow.headers.get('content-type')).toBe('audio/wav');
    const slowAudio = Buffer.from(await slow.arrayBuffer());
    const fastAudio = Buffer.from(await fast.arrayBuffer());
    expect(slowAudio.toString('ascii', 0, 4)).toBe('RIFF');
    expect(slowAudio.toString('ascii', 8, 12)).toBe('WAVE');
    expect(slowAudio.readUInt32LE(40)).toBe(slowAudio.length - 44);
    expect(slowAudio.length - 44).toBeCloseTo(4 * (fastAudio.length - 44), -2);
    const row = await usageRowFor(env.api, slow.headers.get('x-request-id')!);
    expect(row.credits_nano).toBe(String(input.length * 3_000_000));
  });

  test.each([
    ['input missing', { voice: 'alloy' }, 'input'],
    ['input over 4096 characters', { voice: 'alloy', input: 'x'.repeat(4097) }, 'input'],
    ['voice missing', { input: 'hi' }, 'voice'],
    ['an unknown voice', { input: 'hi', voice: 'robot' }, 'voice'],
    ['an unknown format', { input: 'hi', voice: 'alloy', response_format: 'm4a' }, 'response_format'],
    ['speed above 4', { input: 'hi', voice: 'alloy', speed: 4.5 }, 'speed'],
    ['speed below 0.25', { input: 'hi', voice: 'alloy', speed: 0.2 }, 'speed'],
    ['an image model', { input: 'hi', voice: 'alloy', model: 'openai/dall-e-3' }, 'model'],
    ['an unknown field', { input: 'hi', voice: 'alloy', instructions: 'whisper' }, 'body'],
  ])('%s → 400 naming the field', async (_name, body, field) => {
    const error = await expectError(await post(body), 400, 'invalid_request_error');
    expect(error.message.startsWith(field)).toBe(true);
  });

  test('scope speech:write: 403 naming it; moderation; 402; upstream errors pass through', async () => {
    const { key } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { chat: 'write', image: 'write', transcribe: 'write' } });
    expect((await expectError(await post({ input: 'hi', voice: 'alloy' }, key), 403, 'permission_error')).message).toContain('speech:write');
    const since = env.sim.requests.length;
    await expectError(await post({ input: 'say forbidden-word', voice: 'alloy' }), 403, 'content_policy_violation');
    expect(env.sim.requests.length).toBe(since);
    await withEmptyBalance(env, async () => {
      await expectError(await post({ input: 'hi', voice: 'alloy' }), 402, 'insufficient_credits');
    });
    const failed = await post({ input: 'hi [[error:429]]', voice: 'alloy' });
    expect(failed.status).toBe(429);
    expect(failed.headers.get('retry-after')).toBe('1');
  });
});

describe('POST /v1/audio/transcriptions', () => {
  const post = (body: unknown, key?: string) => postJson(env, '/v1/audio/transcriptions', body, key);
  const oneSecond = wavOfBytes(44 + 48_000).toString('base64');

  test('defaults (whisper-1, audio/wav): multipart upload upstream, {text, model}, metered per second', async () => {
    const since = env.sim.requests.length;
    const response = await post({ audio: oneSecond, language: 'FR' });
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ text: 'Simulated transcript of 1.0 seconds of wav audio in fr.', model: 'openai/whisper-1' });
    const upstream = simRequestsTo(env, '/audio/transcriptions', since)[0]!;
    expect(String(upstream.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
    expect(upstream.body).toEqual({ model: 'whisper-1', language: 'fr', filename: 'audio.wav', type: 'audio/wav', bytes: 48_044, response_format: 'json' });
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    // whisper-1: 0.006 USD per minute = 10,000,000 nano-credits per second.
    expect(row).toMatchObject({ model: 'openai/whisper-1', operation: 'transcription', credits_nano: String(10_000_000) });
  });

  test("OpenAI's multipart upload, as the openai SDK sends it: the same transcript, upstream call and metering", async () => {
    const client = new OpenAI({ apiKey: env.tenant.key, baseURL: `${env.api.url}/v1` });
    const since = env.sim.requests.length;
    const result = await client.audio.transcriptions.create({ file: await toFile(wavOfBytes(44 + 48_000), 'speech.wav', { type: 'audio/wav' }), model: 'openai/whisper-1', language: 'fr' });
    expect(result.text).toBe('Simulated transcript of 1.0 seconds of wav audio in fr.');
    expect(simRequestsTo(env, '/audio/transcriptions', since)[0]!.body).toEqual({ model: 'whisper-1', language: 'fr', filename: 'audio.wav', type: 'audio/wav', bytes: 48_044, response_format: 'json' });
    // A file without a declared audio type goes by its name's extension.
    const byName = await client.audio.transcriptions.create({ file: await toFile(Buffer.alloc(32_000, 7), 'voice.mp3'), model: 'openai/gpt-4o-transcribe' });
    expect(byName.text).toMatch(/mp3/);
  });

  test('multipart uploads are validated like the JSON body: 400 naming the field, 413 beyond 25 MiB', async () => {
    const upload = (form: FormData) => fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}` }, body: form });
    const withFile = (name: string, type: string, extra: Record<string, string> = {}) => {
      const form = new FormData();
      form.set('file', new Blob([Buffer.alloc(1000, 1)], { type }), name);
      for (const [key, value] of Object.entries(extra)) form.set(key, value);
      return form;
    };
    expect((await expectError(await upload(withFile('notes.txt', 'text/plain')), 400, 'invalid_request_error')).message).toMatch(/^file:/);
    expect((await expectError(await upload(withFile('a.wav', 'audio/wav', { response_format: 'srt' })), 400, 'invalid_request_error')).message).toMatch(/^response_format/);
    expect((await expectError(await upload(withFile('a.wav', 'audio/wav', { language: 'english' })), 400, 'invalid_request_error')).message).toMatch(/^language/);
    expect((await expectError(await upload(withFile('a.wav', 'audio/wav', { temperature: '0' })), 400, 'invalid_request_error')).message).toMatch(/temperature/);
    const noFile = new FormData();
    noFile.set('model', 'openai/whisper-1');
    expect((await expectError(await upload(noFile), 400, 'invalid_request_error')).message).toMatch(/^file:/);
    const huge = new FormData();
    huge.set('file', new Blob([Buffer.alloc(25 * MiB + 1, 1)], { type: 'audio/wav' }), 'big.wav');
    await expectError(await upload(huge), 413, 'request_too_large');
    const two = withFile('a.wav', 'audio/wav');
    two.append('file', new Blob([Buffer.alloc(1000, 2)], { type: 'audio/wav' }), 'b.wav');
    expect((await expectError(await upload(two), 400, 'invalid_request_error')).message).toBe('file: send one audio file part');
    // A form of thousands of tiny parts is refused before it is parsed (32 parts at most).
    const parts = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`f${i}`, 'x']));
    expect((await expectError(await upload(withFile('a.wav', 'audio/wav', parts)), 400, 'invalid_request_error')).message).toBe('request body holds more than 32 multipart parts');
    // However the Content-Type spells its boundary parameter.
    const raw = `${Array.from({ length: 5000 }, (_, i) => `--XyZ\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nx\r\n`).join('')}--XyZ--\r\n`;
    for (const type of ['multipart/form-data; xboundary=foo; boundary=XyZ', 'multipart/form-data; boundary=XyZ ; a=b', 'multipart/form-data; BOUNDARY="XyZ"']) {
      const response = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': type }, body: raw });
      expect((await expectError(response, 400, 'invalid_request_error')).message).toBe('request body holds more than 32 multipart parts');
    }
    // A boundary parameter the count and the form reader could read apart is refused, never parsed past the count.
    for (const type of ['multipart/form-data; boundary="XyZ"x', 'multipart/form-data; boundary="XyZ', 'multipart/form-data; boundary="X\\yZ"']) {
      const response = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': type }, body: raw });
      expect((await expectError(response, 400, 'invalid_request_error')).message).toMatch(/more than 32 multipart parts|not a readable multipart|needs its boundary/);
    }
    // Nor may a part's headers run on (megabytes of header lines kept the form reader busy for seconds).
    const longHeaders = `--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n${'a:\r\n'.repeat(5000)}\r\nRIFF\r\n--XyZ--\r\n`;
    const headersResponse = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'multipart/form-data; boundary=XyZ' }, body: longHeaders });
    expect((await expectError(headersResponse, 400, 'invalid_request_error')).message).toBe('request body holds a multipart part whose headers exceed 16384 bytes');
    // And an error names a few unknown fields, not all of them.
    const unknown = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, 'x']));
    expect((await expectError(await upload(withFile('a.wav', 'audio/wav', unknown)), 400, 'invalid_request_error')).message).toMatch(/Unrecognized keys: "f0", .*"f9" and 10 more$/);
    const empty = new FormData();
    empty.set('file', new Blob([], { type: 'audio/wav' }), 'empty.wav');
    expect((await expectError(await upload(empty), 400, 'invalid_request_error')).message).toBe('file: the audio file is empty');
    // A field named __proto__ is a field like any other (an unknown one), not an object's prototype.
    const proto = withFile('a.wav', 'audio/wav');
    proto.set('__proto__', 'x');
    expect((await expectError(await upload(proto), 400, 'invalid_request_error')).message).toMatch(/__proto__/);
    const twice = withFile('a.wav', 'audio/wav', { language: 'en' });
    twice.append('language', 'fr');
    expect((await expectError(await upload(twice), 400, 'invalid_request_error')).message).toBe('language: send the field once');
  });

  test('a body of another type names both accepted types; a compressed body is 415', async () => {
    const plain = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'text/plain' }, body: 'hello' });
    expect((await expectError(plain, 415, 'unsupported_media_type')).message).toBe('Content-Type must be application/json or multipart/form-data');
    const gzipped = await fetch(`${env.api.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ audio: oneSecond })),
    });
    expect((await expectError(gzipped, 415, 'unsupported_media_type')).message).toBe("Content-Encoding 'gzip' is not supported; send the body uncompressed");
  });

  test.each([
    ['audio/mpeg', 'mp3'],
    ['audio/ogg', 'ogg'],
    ['audio/webm', 'webm'],
    ['audio/flac', 'flac'],
  ])('%s is uploaded as .%s', async (mimeType, extension) => {
    const since = env.sim.requests.length;
    const response = await post({ audio: Buffer.alloc(32_000, 7).toString('base64'), mime_type: mimeType, model: 'openai/gpt-4o-transcribe' });
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ text: `Simulated transcript of 2.0 seconds of ${extension} audio.`, model: 'openai/gpt-4o-transcribe' });
    expect(simRequestsTo(env, '/audio/transcriptions', since)[0]!.body).toMatchObject({ filename: `audio.${extension}`, type: mimeType });
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    // gpt-4o-transcribe tokens: 20 audio tokens at 600,000, output tokens at 1,000,000 nano-credits.
    expect(row).toMatchObject({ operation: 'transcription', input_tokens: '20' });
    expect(Number(row.credits_nano)).toBe(20 * 600_000 + Number(row.output_tokens) * 1_000_000);
  });

  test.each([
    ['audio/webm;codecs=opus', 'audio/webm'],
    ['audio/x-wav', 'audio/wav'],
    ['audio/mp3', 'audio/mpeg'],
    ['Audio/FLAC', 'audio/flac'],
  ])('%s is read as %s (codec parameters and common aliases)', async (sent, canonical) => {
    const since = env.sim.requests.length;
    const response = await post({ audio: Buffer.alloc(32_000, 7).toString('base64'), mime_type: sent, model: 'openai/gpt-4o-transcribe' });
    expect(response.status).toBe(200);
    expect(simRequestsTo(env, '/audio/transcriptions', since)[0]!.body).toMatchObject({ type: canonical });
  });

  test('25 MiB of audio written by a JSON encoder that escapes slashes (PHP) is accepted', async () => {
    // Random samples, as compressed audio is: about 1 base64 character in 64 is a slash.
    const audio = wavFile(randomBytes(25 * MiB - 44)).toString('base64');
    const escaped = JSON.stringify({ audio }).replaceAll('/', '\\/');
    expect(escaped.length - audio.length).toBeGreaterThan(300_000); // well past the old 64 KiB allowance
    const response = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: bearer(env.tenant.key), body: escaped });
    expect(response.status).toBe(200);
  });

  test('25 MiB of audio whose base64 is all slashes, every one escaped (PHP), is accepted: the limit holds the content, not its escaping', async () => {
    // Samples of 0xFF (a constant -1 in 16-bit PCM): their base64 is "////...", doubled by escaping.
    const audio = wavFile(Buffer.alloc(25 * MiB - 44, 0xff)).toString('base64');
    const escaped = JSON.stringify({ audio }).replaceAll('/', '\\/');
    expect(escaped.length).toBeGreaterThan(1.9 * audio.length);
    const response = await fetch(`${env.api.url}/v1/audio/transcriptions`, { method: 'POST', headers: bearer(env.tenant.key), body: escaped });
    expect(response.status).toBe(200);
  });

  test('exactly 25 MiB of decoded audio is accepted; one byte more is 413; a body past the limit is 413', async () => {
    const atLimit = await post({ audio: wavOfBytes(25 * MiB).toString('base64') });
    expect(atLimit.status).toBe(200);
    expect((await json(atLimit)).text).toBe(`Simulated transcript of ${((25 * MiB - 44) / 48_000).toFixed(1)} seconds of wav audio.`);

    const since = env.sim.requests.length;
    const overByOne = await post({ audio: wavOfBytes(25 * MiB + 1).toString('base64') });
    const error = await expectError(overByOne, 413, 'request_too_large');
    expect(error.message).toContain('25 MiB');
    const farOver = await post({ audio: Buffer.alloc(26 * MiB).toString('base64') });
    await expectError(farOver, 413, 'request_too_large');
    expect(env.sim.requests.length).toBe(since);
  });

  test.each([
    ['audio missing', {}, 'audio'],
    ['empty audio', { audio: '' }, 'audio'],
    ['audio that is not base64', { audio: 'this is not base64!' }, 'audio'],
    ['unpadded base64', { audio: 'AAAAA' }, 'audio'],
    ['an unsupported mime type', { audio: oneSecond, mime_type: 'audio/aac' }, 'mime_type'],
    ['a video mime type', { audio: oneSecond, mime_type: 'video/mp4' }, 'mime_type'],
    ['a language that is not ISO 639-1', { audio: oneSecond, language: 'eng' }, 'language'],
    ['an unknown two-letter language', { audio: oneSecond, language: 'qq' }, 'language'],
    ['a speech model', { audio: oneSecond, model: 'openai/tts-1' }, 'model'],
    ['an unknown field', { audio: oneSecond, prompt: 'names' }, 'body'],
  ])('%s → 400 naming the field', async (_name, body, field) => {
    const error = await expectError(await post(body), 400, 'invalid_request_error');
    expect(error.message.startsWith(field)).toBe(true);
  });

  test('scope transcribe:write: 403 naming it; 402 on an empty balance; unknown model 404', async () => {
    const { key } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'restricted', scopes: { chat: 'write', speech: 'write' } });
    expect((await expectError(await post({ audio: oneSecond }, key), 403, 'permission_error')).message).toContain('transcribe:write');
    await withEmptyBalance(env, async () => {
      await expectError(await post({ audio: oneSecond }), 402, 'insufficient_credits');
    });
    await expectError(await post({ audio: oneSecond, model: 'openai/whisper-9' }), 404, 'not_found_error');
  });
});

describe('alt-text image limit', () => {
  test('an image over 20 MiB decoded is 413', async () => {
    const response = await postJson(env, '/v1/images/alt-text', { image_base64: Buffer.alloc(20 * MiB + 1).toString('base64') });
    await expectError(response, 413, 'request_too_large');
  });
});
