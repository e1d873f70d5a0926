import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import {
  ALT_TEXT_BODY_LIMIT_BYTES,
  ALT_TEXT_DEFAULT_MAX_LENGTH,
  AltTextRequest,
  altTextImage,
  altTextInstructions,
  base64DecodedBytes,
  cleanAltText,
  DEFAULT_ALT_TEXT_MODEL,
  MAX_ALT_TEXT_IMAGE_BYTES,
} from '../../../domain/content';
import type { UnifiedRequest } from '../../../providers/types';
import { ApiError } from '../../errors';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { type ContentServices } from './services';
import { chatModelFor } from '../../model-lookup';

export const imageTooLarge = () =>
  new ApiError(413, 'request_too_large', `the image exceeds the limit of ${MAX_ALT_TEXT_IMAGE_BYTES} bytes (${MAX_ALT_TEXT_IMAGE_BYTES / 1024 / 1024} MiB) decoded`);

/** POST /v1/images/alt-text: one vision chat call that describes the image. */
export function mountAltText(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  router.post(
    '/v1/images/alt-text',
    rateLimit(deps),
    authenticate(deps, { scope: 'image', access: 'write', billsProject: true }),
    jsonBody(ALT_TEXT_BODY_LIMIT_BYTES, { escapedSlashCountsOnce: true }),
    async (ctx) => {
      const body = parseInput(AltTextRequest, ctx.request.body);
      const image = altTextImage(body);
      if (image.kind === 'base64' && base64DecodedBytes(image.data) > MAX_ALT_TEXT_IMAGE_BYTES) throw imageTooLarge();
      const model = chatModelFor(body.model ?? DEFAULT_ALT_TEXT_MODEL, 'alt text', 'vision');
      const instruction = body.context ? `Write the alt text for this image. It appears in this context: ${body.context}` : 'Write the alt text for this image.';
      const request: UnifiedRequest = {
        model,
        system: [{ type: 'text', text: altTextInstructions(body) }],
        messages: [{ role: 'user', content: [{ type: 'image', source: image }, { type: 'text', text: instruction }] }],
        max_tokens: Math.min(400, model.max_output_tokens),
      };
      await gateway.admit(ctx, request);
      const result = await gateway.generate(ctx, request, 'alt_text');
      if (!result) return; // the upstream failure was relayed
      const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      const altText = cleanAltText(text, body.max_length ?? ALT_TEXT_DEFAULT_MAX_LENGTH);
      if (!altText) throw new ApiError(502, 'upstream_error', 'the model returned no alt text');
      ctx.body = { alt_text: altText, model: model.id };
    },
  );
}
