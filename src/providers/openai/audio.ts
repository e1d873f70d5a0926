import { z } from 'zod';
import { httpErrorFor, InvalidUpstreamResponseError, parseRetryAfter, ProviderError } from '../errors';
import { joinUrl, postJson, transportFailure, type TransportSettings } from '../http';
import type { MediaModelRecord } from '../catalog';
import type { CallOptions } from '../types';
import { authorizationHeaders, type OpenAIMediaSettings } from './images';

/** Transcription usage: whisper-1 reports seconds of audio, the gpt-4o transcribe models tokens. */
export const OpenAITranscriptionSchema = z.looseObject({
  text: z.string(),
  usage: z
    .union([
      z.looseObject({ type: z.literal('duration'), seconds: z.number().nonnegative() }),
      z.looseObject({
        type: z.literal('tokens'),
        input_tokens: z.number().int().nonnegative(),
        output_tokens: z.number().int().nonnegative(),
        input_token_details: z.looseObject({ audio_tokens: z.number().int().nullish(), text_tokens: z.number().int().nullish() }).nullish(),
      }),
    ])
    .nullish(),
});
export type OpenAITranscription = z.infer<typeof OpenAITranscriptionSchema>;

export interface TranscriptionInput {
  audio: Buffer;
  /** The upload's file name: OpenAI detects the format from its extension. */
  filename: string;
  mimeType: string;
  language?: string;
}

export interface SpeechAudio {
  audio: Buffer;
  contentType: string;
}

/**
 * A multipart POST with the same contract as `postJson`: the timeout covers the wait for
 * the response head, the caller's signal aborts at any time, non-2xx answers become typed
 * errors keeping status and body. The whole (small, JSON) answer is read here.
 */
async function postMultipart(settings: TransportSettings, url: string, form: FormData, model: string, headers: Record<string, string>, signal?: AbortSignal): Promise<unknown> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('upstream timeout'));
  }, settings.timeoutMs);
  try {
    let response: Response;
    try {
      response = await (settings.fetch ?? fetch)(url, { method: 'POST', headers, body: form, signal: controller.signal });
    } finally {
      clearTimeout(timer);
    }
    const text = await response.text();
    if (!response.ok) {
      throw httpErrorFor(
        {
          provider: settings.provider,
          model,
          status: response.status,
          body: text,
          contentType: response.headers.get('content-type') ?? 'application/json',
          retryAfterMs: parseRetryAfter(response.headers),
          upstreamRequestId: response.headers.get('x-request-id') ?? undefined,
        },
        false,
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new InvalidUpstreamResponseError('openai answered with invalid JSON', { provider: settings.provider, model, retryable: false });
    }
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw transportFailure(settings.provider, model, error, timedOut, signal);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** OpenAI `POST /audio/speech` (JSON in, audio bytes out) and `POST /audio/transcriptions` (multipart in, JSON out). */
export function createOpenAIAudioClient(settings: OpenAIMediaSettings) {
  const transport: TransportSettings = { ...settings, provider: 'openai' };
  const headers = authorizationHeaders(settings.apiKey);
  return {
    async speech(model: MediaModelRecord, body: Record<string, unknown>, options: CallOptions = {}): Promise<SpeechAudio> {
      const response = await postJson(transport, joinUrl(settings.baseUrl, 'audio/speech'), { ...body, model: model.name }, {
        model: model.id,
        headers,
        signal: options.signal,
        isContextOverflow: () => false,
      });
      let audio: Buffer;
      try {
        audio = Buffer.from(await response.arrayBuffer());
      } catch (error) {
        throw transportFailure('openai', model.id, error, false, options.signal);
      } finally {
        (response as Response & { detach?: () => void }).detach?.();
      }
      return { audio, contentType: response.headers.get('content-type') ?? 'application/octet-stream' };
    },

    async transcribe(model: MediaModelRecord, input: TranscriptionInput, options: CallOptions = {}): Promise<OpenAITranscription> {
      const form = new FormData();
      form.append('file', new Blob([input.audio], { type: input.mimeType }), input.filename);
      form.append('model', model.name);
      form.append('response_format', 'json');
      if (input.language) form.append('language', input.language);
      const answer = await postMultipart(transport, joinUrl(settings.baseUrl, 'audio/transcriptions'), form, model.id, headers, options.signal);
      const parsed = OpenAITranscriptionSchema.safeParse(answer);
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable transcription from openai', { provider: 'openai', model: model.id, retryable: false });
      return parsed.data;
    },
  };
}
