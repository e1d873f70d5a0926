import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import { DEFAULT_SPEECH_MODEL, SpeechRequest, speechCharacters } from '../../../domain/content';
import { computeMediaCreditsNano } from '../../../providers/catalog';
import type { SpeechAudio } from '../../../providers/openai/audio';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { relayUpstreamFailure } from '../gateway/gateway';
import { type ContentServices } from './services';
import { mediaModelFor } from '../../model-lookup';

/** Names the catalog model that spoke, since the body is the audio itself. */
export const MODEL_HEADER = 'X-Model';

/** POST /v1/audio/speech: the OpenAI speech API; the answer is the audio bytes. */
export function mountSpeech(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  router.post(
    '/v1/audio/speech',
    rateLimit(deps),
    authenticate(deps, { scope: 'speech', access: 'write', billsProject: true }),
    jsonBody(deps.config.BODY_LIMIT_BYTES),
    async (ctx) => {
      const body = parseInput(SpeechRequest, ctx.request.body);
      const model = mediaModelFor(body.model ?? DEFAULT_SPEECH_MODEL, 'speech');
      await services.gateway.admitTexts(ctx, [body.input]);
      const { model: _model, ...upstream } = body;
      let result: SpeechAudio;
      try {
        result = await services.audio.speech(model, upstream, { signal: gateway.clientSignal(ctx) });
      } catch (error) {
        return relayUpstreamFailure(ctx, error);
      }
      void services.gateway.meterRow(ctx, { model: model.id, operation: 'speech', credits_nano: computeMediaCreditsNano(model, { characters: speechCharacters(body.input) }) });
      ctx.set(MODEL_HEADER, model.id);
      ctx.type = result.contentType;
      ctx.body = result.audio;
    },
  );
}
