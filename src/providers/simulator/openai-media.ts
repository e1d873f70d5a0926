import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { findMediaModel, type MediaCapability } from '../catalog';
import { DirectiveError, parseDirectives } from './directives';
import { silentMp3, solidPng, tonePcm, wavFile, wavSeconds } from './media-files';
import { openaiProtocol } from './openai-protocol';
import { asRecord } from './protocol';
import { SimError } from './script';
import type { RecordedRequest } from './server';

/**
 * The OpenAI media endpoints: `POST .../images/generations` (JSON; PNG images),
 * `POST .../audio/speech` (JSON in, mp3 / wav / pcm bytes out) and
 * `POST .../audio/transcriptions` (multipart in, JSON out), plus `GET /sim/images/{hex}.png`
 * for images answered as URLs. Deterministic, described in docs/simulator.md.
 */
export const MEDIA_PATHS = /(\/images\/generations|\/audio\/speech|\/audio\/transcriptions)$/;
const IMAGE_FILE = /^\/sim\/images\/([0-9a-f]{6})\.png$/;

// gpt-image-1 output tokens per image, by quality and size (OpenAI's published table).
const IMAGE_TOKENS: Record<string, Record<string, number>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
};
const TRANSCRIPTION_EXTENSIONS = ['flac', 'mp3', 'mp4', 'mpeg', 'mpga', 'm4a', 'ogg', 'wav', 'webm'];
const SPEECH_FORMATS: Record<string, string> = { mp3: 'audio/mpeg', wav: 'audio/wav', pcm: 'audio/pcm' };
/** Speech pace: 15 characters per second at speed 1. */
const SPEECH_CHARS_PER_SECOND = 15;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

async function readBuffer(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function send(response: ServerResponse, record: RecordedRequest, status: number, body: Buffer | string, contentType: string, headers: Record<string, string> = {}): void {
  record.status = status;
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers });
  response.end(body);
}

function mediaModel(name: unknown, capability: MediaCapability): string {
  if (typeof name !== 'string' || !name) throw new SimError(400, 'you must provide a model parameter');
  if (!findMediaModel(`openai/${name}`, capability)) throw new SimError(404, `The model '${name}' does not exist or is not a ${capability.replace('_', ' ')} model`, 'model');
  return name;
}

/** Directives in a prompt or speech input: `[[error:STATUS]]` and `[[delay:MS]]`; returns the text without them. */
async function applyDirectives(text: string): Promise<string> {
  let directives;
  try {
    directives = parseDirectives(text);
  } catch (error) {
    if (error instanceof DirectiveError) throw new SimError(400, error.message);
    throw error;
  }
  if (directives.delayMs) await sleep(directives.delayMs);
  if (directives.errorStatus !== undefined) throw new SimError(directives.errorStatus, `simulated error ${directives.errorStatus}`);
  return directives.text;
}

async function images(body: Record<string, unknown>, request: IncomingMessage) {
  const model = mediaModel(body.model, 'image_generation');
  if (typeof body.prompt !== 'string' || !body.prompt) throw new SimError(400, "Missing required parameter: 'prompt'.");
  const prompt = await applyDirectives(body.prompt);
  const n = typeof body.n === 'number' ? body.n : 1;
  if (model === 'dall-e-3' && n !== 1) throw new SimError(400, 'You must provide n=1 for this model.');
  const colours = Array.from({ length: n }, (_, i) => hashOf(`${prompt}#${i}`).slice(0, 6));
  const created = Math.floor(Date.now() / 1000);
  const png = (hex: string) => solidPng([parseInt(hex.slice(0, 2), 16), parseInt(hex.slice(2, 4), 16), parseInt(hex.slice(4, 6), 16)]).toString('base64');
  if (model === 'dall-e-3') {
    const asUrl = (body.response_format ?? 'url') === 'url';
    const origin = `http://${request.headers.host ?? 'localhost'}`;
    return {
      created,
      data: colours.map((hex) => ({ ...(asUrl ? { url: `${origin}/sim/images/${hex}.png` } : { b64_json: png(hex) }), revised_prompt: `A simulated rendering of: ${prompt}` })),
    };
  }
  const size = typeof body.size === 'string' && body.size !== 'auto' ? body.size : '1024x1024';
  const quality = typeof body.quality === 'string' && body.quality !== 'auto' ? body.quality : 'medium';
  const textTokens = Math.ceil(prompt.length / 4);
  const outputTokens = (IMAGE_TOKENS[quality]?.[size] ?? 1056) * n;
  return {
    created,
    background: body.background ?? 'opaque',
    data: colours.map((hex) => ({ b64_json: png(hex) })),
    output_format: 'png',
    quality,
    size,
    usage: { input_tokens: textTokens, input_tokens_details: { image_tokens: 0, text_tokens: textTokens }, output_tokens: outputTokens, total_tokens: textTokens + outputTokens },
  };
}

async function speech(body: Record<string, unknown>): Promise<{ audio: Buffer; contentType: string }> {
  mediaModel(body.model, 'speech');
  if (typeof body.input !== 'string' || !body.input) throw new SimError(400, "Missing required parameter: 'input'.");
  if (typeof body.voice !== 'string') throw new SimError(400, "Missing required parameter: 'voice'.");
  const text = await applyDirectives(body.input);
  const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
  const contentType = SPEECH_FORMATS[format];
  if (!contentType) throw new SimError(400, `the simulator renders mp3, wav and pcm only, not ${format}`);
  const speed = typeof body.speed === 'number' && body.speed > 0 ? body.speed : 1;
  const ms = Math.max(100, Math.ceil(([...text].length * 1000) / SPEECH_CHARS_PER_SECOND / speed));
  const audio = format === 'mp3' ? silentMp3(ms) : format === 'wav' ? wavFile(tonePcm(ms)) : tonePcm(ms);
  return { audio, contentType };
}

async function transcription(raw: Buffer, request: IncomingMessage, record: RecordedRequest) {
  let form: FormData;
  try {
    form = await new Request('http://simulator/', { method: 'POST', headers: { 'content-type': request.headers['content-type'] ?? '' }, body: raw }).formData();
  } catch {
    throw new SimError(400, 'the request must be multipart/form-data with a file');
  }
  const file = form.get('file');
  const model = mediaModel(form.get('model'), 'transcription');
  const language = typeof form.get('language') === 'string' ? String(form.get('language')) : undefined;
  if (!file || typeof file === 'string') throw new SimError(400, "Missing required parameter: 'file'.");
  const audio = Buffer.from(await file.arrayBuffer());
  const extension = /\.([a-z0-9]+)$/i.exec(file.name)?.[1]?.toLowerCase() ?? '';
  record.body = { model, language, filename: file.name, type: file.type, bytes: audio.length, response_format: form.get('response_format') };
  if (!TRANSCRIPTION_EXTENSIONS.includes(extension)) throw new SimError(400, `Invalid file format. Supported formats: ${JSON.stringify(TRANSCRIPTION_EXTENSIONS)}`);
  const seconds = wavSeconds(audio) ?? audio.length / 16_000;
  const text = `Simulated transcript of ${seconds.toFixed(1)} seconds of ${extension} audio${language ? ` in ${language}` : ''}.`;
  const usage = model === 'whisper-1'
    ? { type: 'duration', seconds: Math.max(1, Math.ceil(seconds)) }
    : (() => {
        const audioTokens = Math.max(1, Math.ceil(seconds * 10));
        const outputTokens = Math.ceil(text.length / 4);
        return { type: 'tokens', input_tokens: audioTokens, input_token_details: { text_tokens: 0, audio_tokens: audioTokens }, output_tokens: outputTokens, total_tokens: audioTokens + outputTokens };
      })();
  return { text, usage };
}

/** Answers a media request; false when the path is not one of ours. */
export async function handleOpenAIMedia(request: IncomingMessage, response: ServerResponse, path: string, record: RecordedRequest): Promise<boolean> {
  const file = IMAGE_FILE.exec(path);
  if (request.method === 'GET' && file) {
    const hex = file[1]!;
    send(response, record, 200, solidPng([parseInt(hex.slice(0, 2), 16), parseInt(hex.slice(2, 4), 16), parseInt(hex.slice(4, 6), 16)]), 'image/png');
    return true;
  }
  const kind = request.method === 'POST' ? MEDIA_PATHS.exec(path)?.[1] : undefined;
  if (!kind) return false;
  const raw = await readBuffer(request);
  try {
    if (kind === '/audio/transcriptions') {
      send(response, record, 200, JSON.stringify(await transcription(raw, request, record)), 'application/json');
      return true;
    }
    let body: Record<string, unknown>;
    try {
      body = asRecord(JSON.parse(raw.toString('utf8')));
      record.body = body;
    } catch {
      throw new SimError(400, 'request body is not valid JSON');
    }
    if (kind === '/images/generations') {
      send(response, record, 200, JSON.stringify(await images(body, request)), 'application/json');
    } else {
      const { audio, contentType } = await speech(body);
      send(response, record, 200, audio, contentType);
    }
  } catch (error) {
    if (!(error instanceof SimError)) throw error;
    const failure = openaiProtocol.error(error);
    send(response, record, failure.status, JSON.stringify(failure.body), 'application/json', failure.headers ?? {});
  }
  return true;
}
