import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import {
  AUDIO_TYPES,
  base64DecodedBytes,
  DEFAULT_TRANSCRIPTION_MODEL,
  estimateAudioSeconds,
  MAX_TRANSCRIPTION_AUDIO_BYTES,
  TRANSCRIPTION_BODY_LIMIT_BYTES,
  TRANSCRIPTION_UPLOAD_LIMIT_BYTES,
  TranscriptionRequest,
  TranscriptionUploadFields,
  uploadedAudioType,
  type AudioMimeType,
} from '../../../domain/content';
import { readBodyUpTo } from '../../../read-body';
import { computeMediaCreditsNano, type MediaUsage } from '../../../providers/catalog';
import type { OpenAITranscription } from '../../../providers/openai/audio';
import { ApiError, badRequest, BODY_MIN_RATE } from '../../errors';
import { jsonBody, refuseEncodedBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { relayUpstreamFailure } from '../gateway/gateway';
import { type ContentServices } from './services';
import { mediaModelFor } from '../../model-lookup';
import { MIMEType } from 'node:util';

export const audioTooLarge = () =>
  new ApiError(413, 'request_too_large', `audio exceeds the limit of ${MAX_TRANSCRIPTION_AUDIO_BYTES} bytes (25 MiB) decoded`);

/** What the provider reported, or seconds estimated from the audio when it reported nothing. */
function usageOf(result: OpenAITranscription, audio: Buffer, mimeType: string): MediaUsage {
  const usage = result.usage;
  if (usage?.type === 'tokens') {
    return { input_tokens: usage.input_tokens, audio_input_tokens: usage.input_token_details?.audio_tokens ?? usage.input_tokens, output_tokens: usage.output_tokens };
  }
  if (usage?.type === 'duration') return { seconds: usage.seconds };
  return { seconds: estimateAudioSeconds(audio, mimeType) };
}

interface Transcription {
  model?: string;
  audio: Buffer;
  mime_type: AudioMimeType;
  language?: string;
}

/** The spec's JSON body: base64 audio. Size before shape: an oversize upload is 413 whatever else is wrong with it. */
function fromJson(raw: unknown): Transcription {
  const audio = (raw as { audio?: unknown } | undefined)?.audio;
  if (typeof audio === 'string' && base64DecodedBytes(audio) > MAX_TRANSCRIPTION_AUDIO_BYTES) throw audioTooLarge();
  const body = parseInput(TranscriptionRequest, raw);
  return { ...body, audio: Buffer.from(body.audio, 'base64') };
}

const MAX_UPLOAD_PARTS = 32;

/** The `boundary` parameter of a Content-Type, read as the form reader reads it (MIME rules). */
function boundaryOf(contentType: string): string | undefined {
  try {
    return new MIMEType(contentType).params.get('boundary') || undefined;
  } catch {
    return undefined;
  }
}

const MAX_PART_HEADER_BYTES = 16 * 1024;

/** Whether every part's header block (after a delimiter, up to its blank line) is within MAX_PART_HEADER_BYTES. */
function partHeadersBounded(raw: Buffer, delimiter: string): boolean {
  for (let at = raw.indexOf(delimiter); at >= 0; at = raw.indexOf(delimiter, at + delimiter.length)) {
    const start = at + delimiter.length;
    if (raw.subarray(start, start + 2).toString('latin1') === '--') return true; // the closing delimiter
    const end = raw.indexOf('\r\n\r\n', start);
    if (end < 0 || end - start > MAX_PART_HEADER_BYTES) return false;
  }
  return true;
}

/** How many times `raw` holds `needle`, counting no further than `cap`. */
function countUpTo(raw: Buffer, needle: string, cap: number): number {
  let count = 0;
  for (let at = raw.indexOf(needle); at >= 0 && count < cap; at = raw.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * OpenAI's own multipart upload (a `file` part and text fields), as the openai SDK's
 * `audio.transcriptions.create` sends it. The body is read up to the audio limit plus the
 * multipart framing, then parsed by the platform's FormData reader.
 */
async function fromUpload(ctx: AppContext): Promise<Transcription> {
  const tooLarge = () => new ApiError(413, 'request_too_large', `request body exceeds the limit of ${TRANSCRIPTION_UPLOAD_LIMIT_BYTES} bytes`);
  refuseEncodedBody(ctx);
  const raw = await readBodyUpTo(ctx, TRANSCRIPTION_UPLOAD_LIMIT_BYTES, tooLarge, { minRate: BODY_MIN_RATE });
  // The upload has a handful of fields: hundreds of thousands of tiny parts would keep the
  // form reader (and the process) busy for seconds. Counted on the bytes before parsing.
  const boundary = boundaryOf(ctx.get('content-type'));
  if (!boundary) throw badRequest('Content-Type: a multipart/form-data upload needs its boundary parameter');
  // Delimiters: one per part, and the closing one.
  const delimiters = countUpTo(raw, `--${boundary}`, MAX_UPLOAD_PARTS + 2);
  if (delimiters > MAX_UPLOAD_PARTS + 1) throw badRequest(`request body holds more than ${MAX_UPLOAD_PARTS} multipart parts`);
  // (A body without two delimiters of that boundary holds no part: the boundary was read otherwise.)
  if (delimiters < 2) throw badRequest('request body is not a readable multipart/form-data upload');
  // Nor may a part's headers run on: megabytes of header lines keep the form reader busy for seconds.
  if (!partHeadersBounded(raw, `--${boundary}`)) throw badRequest(`request body holds a multipart part whose headers exceed ${MAX_PART_HEADER_BYTES} bytes`);
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': ctx.get('content-type') } }).formData();
  } catch {
    throw badRequest('request body is not a readable multipart/form-data upload');
  }
  const files = form.getAll('file');
  if (files.length > 1) throw badRequest('file: send one audio file part', 'file');
  const file = files[0];
  if (!(file instanceof Blob)) throw badRequest('file: an audio file part is required', 'file');
  if (file.size === 0) throw badRequest('file: the audio file is empty', 'file');
  const fields = new Map<string, string>();
  for (const [name, value] of form.entries()) {
    if (name === 'file') continue;
    if (typeof value !== 'string') throw badRequest(`${name}: must be a text field`, name);
    if (fields.has(name)) throw badRequest(`${name}: send the field once`, name);
    fields.set(name, value);
  }
  // (fromEntries makes every name an own key, `__proto__` too, so the schema sees and refuses it.)
  const parsed = parseInput(TranscriptionUploadFields, Object.fromEntries(fields));
  const filename = (file as File).name ?? '';
  const mimeType = uploadedAudioType(file.type, filename);
  if (!mimeType) throw badRequest(`file: must be one of ${Object.keys(AUDIO_TYPES).join(', ')} (by its type or its name's extension)`, 'file');
  const { response_format: _json, ...rest } = parsed;
  return { ...rest, audio: Buffer.from(await file.arrayBuffer()), mime_type: mimeType };
}

/**
 * POST /v1/audio/transcriptions: base64 audio in JSON (the spec's body), or OpenAI's
 * multipart upload; forwarded as the multipart upload the provider expects. The JSON body
 * limit admits the largest allowed audio as base64; the decoded size is then checked exactly
 * (413 beyond 25 MiB).
 */
export function mountTranscriptions(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  const json = jsonBody(TRANSCRIPTION_BODY_LIMIT_BYTES, { accepted: 'application/json or multipart/form-data', escapedSlashCountsOnce: true });
  router.post(
    '/v1/audio/transcriptions',
    rateLimit(deps),
    authenticate(deps, { scope: 'transcribe', access: 'write', billsProject: true }),
    (ctx, next) => (ctx.is('multipart/form-data') ? next() : json(ctx, next)),
    async (ctx) => {
      const body = ctx.is('multipart/form-data') ? await fromUpload(ctx) : fromJson(ctx.request.body);
      const model = mediaModelFor(body.model ?? DEFAULT_TRANSCRIPTION_MODEL, 'transcription');
      const audio = body.audio;
      if (audio.length > MAX_TRANSCRIPTION_AUDIO_BYTES) throw audioTooLarge();
      await services.gateway.admitTexts(ctx, []);
      let result: OpenAITranscription;
      try {
        result = await services.audio.transcribe(
          model,
          { audio, filename: `audio.${AUDIO_TYPES[body.mime_type]}`, mimeType: body.mime_type, language: body.language },
          { signal: gateway.clientSignal(ctx) },
        );
      } catch (error) {
        return relayUpstreamFailure(ctx, error);
      }
      const usage = usageOf(result, audio, body.mime_type);
      void services.gateway.meterRow(ctx, {
        model: model.id,
        operation: 'transcription',
        credits_nano: computeMediaCreditsNano(model, usage),
        input_tokens: usage.input_tokens ?? 0,
        output_tokens: usage.output_tokens ?? 0,
      });
      ctx.body = { text: result.text, model: model.id };
    },
  );
}
