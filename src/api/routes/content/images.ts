import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import { checkImageRequest, DEFAULT_IMAGE_MODEL, ImageGenerationRequest, imagePriceKey } from '../../../domain/content';
import { computeMediaCreditsNano } from '../../../providers/catalog';
import type { OpenAIImagesResponse } from '../../../providers/openai/images';
import { badRequest } from '../../errors';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { relayUpstreamFailure } from '../gateway/gateway';
import { type ContentServices } from './services';
import { mediaModelFor } from '../../model-lookup';

/** POST /v1/images/generations: the OpenAI images API, request and answer in its shape. */
export function mountImages(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  router.post(
    '/v1/images/generations',
    rateLimit(deps),
    authenticate(deps, { scope: 'image', access: 'write', billsProject: true }),
    jsonBody(deps.config.BODY_LIMIT_BYTES),
    async (ctx) => {
      const body = parseInput(ImageGenerationRequest, ctx.request.body);
      const model = mediaModelFor(body.model ?? DEFAULT_IMAGE_MODEL, 'image_generation');
      const violation = checkImageRequest(body, model.name, model.id);
      if (violation) throw badRequest(`${violation.param}: ${violation.message}`, violation.param);
      await services.gateway.admitTexts(ctx, [body.prompt]);
      const { model: _model, stream: _stream, ...upstream } = body; // (never streamed: not sent)
      let result: OpenAIImagesResponse;
      try {
        result = await services.images.generate(model, upstream, { signal: gateway.clientSignal(ctx) });
      } catch (error) {
        return relayUpstreamFailure(ctx, error);
      }
      const usage = result.usage
        ? { input_tokens: result.usage.input_tokens, output_tokens: result.usage.output_tokens }
        : { input_tokens: 0, output_tokens: 0 };
      const credits = computeMediaCreditsNano(model, { ...usage, images: { count: result.data.length, key: imagePriceKey(body, model.name) } });
      void services.gateway.meterRow(ctx, { model: model.id, operation: 'image', credits_nano: credits, ...usage });
      ctx.body = result;
    },
  );
}
