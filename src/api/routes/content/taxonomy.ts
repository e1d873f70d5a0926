import type Router from '@koa/router';
import { authenticate } from '../../../auth/middleware';
import {
  applyTaxonomyRules,
  DEFAULT_TAXONOMY_MODEL,
  TAXONOMY_BODY_LIMIT_BYTES,
  TAXONOMY_LIMITS,
  TaxonomyAnswer,
  TaxonomyRequest,
  taxonomyInstructions,
  taxonomyJsonSchema,
} from '../../../domain/content';
import type { UnifiedRequest, UnifiedResult } from '../../../providers/types';
import { ApiError, badRequest } from '../../errors';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import type { AppContext, AppState } from '../../types';
import { parseInput } from '../../validate';
import { type ContentServices } from './services';
import { chatModelFor } from '../../model-lookup';

const unreadableAnswer = () => new ApiError(502, 'upstream_error', 'the model answered with something that does not match the taxonomy schema');

/** The model's JSON answer, checked against the schema we asked for. */
function readAnswer(result: UnifiedResult): TaxonomyAnswer | undefined {
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  try {
    const parsed = TaxonomyAnswer.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** POST /v1/content/suggest-taxonomy: one structured-output (json_schema) call, then our rules on its answer. */
export function mountTaxonomy(router: Router<AppState, AppContext>, services: ContentServices): void {
  const { deps, gateway } = services;
  router.post(
    '/v1/content/suggest-taxonomy',
    rateLimit(deps),
    authenticate(deps, { scope: 'chat', access: 'write', billsProject: true }),
    jsonBody(Math.max(deps.config.BODY_LIMIT_BYTES, TAXONOMY_BODY_LIMIT_BYTES)),
    async (ctx) => {
      const body = parseInput(TaxonomyRequest, ctx.request.body);
      const model = chatModelFor(body.model ?? DEFAULT_TAXONOMY_MODEL, 'taxonomy suggestion', 'json_output');
      if (!model.parameters.response_format_type.includes('json_schema')) {
        throw badRequest(`model: ${model.id} does not accept response_format json_schema (structured output)`, 'model');
      }
      const request: UnifiedRequest = {
        model,
        system: [{ type: 'text', text: taxonomyInstructions(body) }],
        messages: [{ role: 'user', content: [{ type: 'text', text: body.content }] }],
        response_format: { type: 'json_schema', json_schema: { name: 'taxonomy_suggestion', schema: taxonomyJsonSchema(body.categories), strict: true } },
        max_tokens: Math.min(TAXONOMY_LIMITS.maxOutputTokens, model.max_output_tokens),
      };
      await gateway.admit(ctx, request);
      const result = await gateway.generate(ctx, request, 'taxonomy');
      if (!result) return; // the upstream failure was relayed
      const answer = readAnswer(result);
      if (!answer) {
        ctx.state.log.warn({ model: model.id, finish_reason: result.finish_reason.raw }, 'taxonomy answer did not match the schema');
        throw unreadableAnswer();
      }
      ctx.body = { ...applyTaxonomyRules(answer, body), model: model.id };
    },
  );
}
