import Router from '@koa/router';
import type { Deps } from '../../deps';
import { ChatCompletionRequest, checkChatRequest } from '../../domain/chat';
import { authenticate } from '../../auth/middleware';
import { chatModelFor } from '../model-lookup';
import { sseMessage } from '../../providers/sse';
import { chatToUnified } from '../../providers/shapes/chat-to-unified';
import { createChatChunker, unifiedToChat } from '../../providers/shapes/unified-to-chat';
import { ApiError, badRequest } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput } from '../validate';
import { createGateway, toGatewayError, type GatewayOptions } from './gateway/gateway';


/** The gateway envelope as a chat completion chunk: the openai SDK raises it as an APIError. */
function chatErrorChunk(ctx: AppContext, error: Error): string {
  const failure = toGatewayError(error);
  const apiError = failure instanceof ApiError ? failure : new ApiError(502, 'upstream_error', 'the model provider stream failed');
  return sseMessage({ error: { message: apiError.message, type: apiError.type, code: apiError.status, request_id: ctx.state.requestId } });
}

/** POST /v1/chat/completions: the OpenAI chat shape onto any catalog model. */
export function chatCompletionsRouter(deps: Deps, options: GatewayOptions = {}): Router<AppState, AppContext> {
  const gateway = createGateway(deps, options);
  const router = new Router<AppState, AppContext>();
  router.post(
    '/v1/chat/completions',
    rateLimit(deps),
    authenticate(deps, { scope: 'chat', access: 'write', billsProject: true }),
    jsonBody(deps.config.BODY_LIMIT_BYTES),
    async (ctx) => {
      const body = parseInput(ChatCompletionRequest, ctx.request.body);
      const model = chatModelFor(body.model, 'chat completions');
      const violation = checkChatRequest(body, model);
      if (violation) throw badRequest(`${violation.param}: ${violation.message}`, violation.param);
      const request = chatToUnified(body, model);
      await gateway.admit(ctx, request);
      await gateway.relay(ctx, request, body.stream === true, {
        json: (result) => unifiedToChat(result, model.id),
        sse() {
          const chunker = createChatChunker(model.id, body.stream_options?.include_usage === true);
          return {
            encode: (part) => chunker(part).map((chunk) => sseMessage(chunk)),
            encodeError: (error) => chatErrorChunk(ctx, error),
            trailer: sseMessage('[DONE]'),
          };
        },
      });
    },
  );
  return router;
}
