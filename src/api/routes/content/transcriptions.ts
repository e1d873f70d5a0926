import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import {
  AUDIO_TYPES,
  base64DecodedBytes,
  DEFAULT_TRANSCRIPTION_MODEL,
  estimateAudioSeconds,
  MAX_TRANSCRIPTION_AUDIO_BYTES,
  TRANSCRIPTION_BODY_LIMIT_BYTES,
  TranscriptionRequest,
} from '../../../domain/content';
import { computeMediaCreditsNano, type MediaUsage } from '../../../providers/catalog';
import type { OpenAITranscription } from '../../../providers/openai/audio';
import { ApiError } from '../../errors';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { relayUpstreamFailure } from '../gateway/gateway';
import { mediaModelFor, type ContentServices } from './helpers';

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

/**
 * POST /v1/audio/transcriptions: base64 audio in JSON, forwarded as the multipart upload
 * the provider expects. The body limit admits the largest allowed audio as base64; the
 * decoded size is then checked exactly (413 beyond 25 MiB).
 */
export function mountTranscriptions(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  router.post(
    '/v1/audio/transcriptions',
    rateLimit(deps),
    authenticate(deps, { scope: 'transcribe', access: 'write' }),
    jsonBody(TRANSCRIPTION_BODY_LIMIT_BYTES),
    async (ctx) => {
      const raw = ctx.request.body as { audio?: unknown } | undefined;
      // Size before shape: an oversize upload is 413 whatever else is wrong with it.
      if (typeof raw?.audio === 'string' && base64DecodedBytes(raw.audio) > MAX_TRANSCRIPTION_AUDIO_BYTES) throw audioTooLarge();
      const body = parseInput(TranscriptionRequest, raw);
      const model = mediaModelFor(body.model ?? DEFAULT_TRANSCRIPTION_MODEL, 'transcription');
      const audio = Buffer.from(body.audio, 'base64');
      if (audio.length > MAX_TRANSCRIPTION_AUDIO_BYTES) throw audioTooLarge();
      await services.admit(ctx, []);
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
      void services.meter(ctx, {
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
