import { z } from 'zod';
import { InvalidUpstreamResponseError } from '../errors';
import { joinUrl, post, postJson, readBytes, transportFailure, type TransportSettings } from '../http';
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

/** A multipart POST through the common transport; the whole (small, JSON) answer is read here. */
async function postMultipart(settings: TransportSettings, url: string, form: FormData, model: string, headers: Record<string, string>, signal?: AbortSignal): Promise<unknown> {
  const response = await post(settings, url, form, { model, headers, signal, isContextOverflow: () => false });
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    throw transportFailure(settings.provider, model, error, false, signal);
  } finally {
    response.detach();
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidUpstreamResponseError('openai answered with invalid JSON', { provider: settings.provider, model, retryable: false });
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
      const audio = await readBytes(response, 'openai', model.id, options.signal);
      // A success that is not audio (an HTML or JSON page from something in between) is not
      // relayed as if it were: the call failed.
      const contentType = response.headers.get('content-type') ?? 'application/octet-stream';
      if (!/^(audio\/|application\/octet-stream)/i.test(contentType) || audio.length === 0) {
        throw new InvalidUpstreamResponseError('openai answered the speech request without audio', { provider: 'openai', model: model.id, retryable: false });
      }
      return { audio, contentType };
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
