import Router from '@koa/router';
import type { Deps } from '../../deps';
import { MessagesRequest } from '../../domain/messages';
import { checkSampling } from '../../domain/chat';
import { authenticate } from '../../auth/middleware';
import { findModel, type ModelRecord } from '../../providers/catalog';
import { UpstreamHttpError } from '../../providers/errors';
import { sseMessage } from '../../providers/sse';
import { messagesToUnified } from '../../providers/shapes/messages-to-unified';
import { createMessagesEventWriter, unifiedToMessages } from '../../providers/shapes/unified-to-messages';
import { ApiError, badRequest } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { nativeErrorType } from '../middleware/error-handler';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState, Middleware } from '../types';
import { parseInput } from '../validate';
import { createGateway, toGatewayError, type GatewayOptions } from './gateway/gateway';

const PROVIDER = 'anthropic';
/** Provider headers the caller may set and the gateway forwards. */
const FORWARDED_HEADERS = ['anthropic-version', 'anthropic-beta'];

/** Prefixed (`anthropic/<name>`) or bare; only Anthropic models are served here. */
export function resolveMessagesModel(name: string): ModelRecord {
  const model = findModel(name.includes('/') ? name : `${PROVIDER}/${name}`);
  if (!model || model.provider !== PROVIDER) {
    throw new ApiError(404, 'not_found_error', `model '${name}' not found; /v1/messages serves ${PROVIDER} models only`);
  }
  return model;
}

function nativeErrorEvent(ctx: AppContext, error: Error): string {
  const failure = toGatewayError(error);
  // The provider's status, else the gateway's for the failure (a timeout is 504: timeout_error).
  const status = error instanceof UpstreamHttpError ? error.status : failure instanceof ApiError ? failure.status : 0;
  const message = failure instanceof ApiError ? failure.message : 'the model provider stream failed';
  return sseMessage({ type: 'error', error: { type: status ? nativeErrorType(status) : 'api_error', message, request_id: ctx.state.requestId } }, 'error');
}

/** Errors on this route use the provider-native envelope, including those of auth and body parsing. */
const nativeErrors: Middleware = async (ctx, next) => {
  ctx.state.errorFormat = 'anthropic';
  await next();
};

/** POST /v1/messages: the Anthropic messages protocol, natively. */
export function messagesRouter(deps: Deps, options: GatewayOptions = {}): Router<AppState, AppContext> {
  const gateway = createGateway(deps, options);
  const router = new Router<AppState, AppContext>();
  router.post(
    '/v1/messages',
    nativeErrors,
    rateLimit(deps),
    authenticate(deps, { scope: 'chat', access: 'write', billsProject: true, allowXApiKey: true }),
    jsonBody(deps.config.MESSAGES_BODY_LIMIT_BYTES),
    async (ctx) => {
      const body = parseInput(MessagesRequest, ctx.request.body);
      const model = resolveMessagesModel(body.model);
      if (body.max_tokens > model.max_output_tokens) throw badRequest(`max_tokens must be at most ${model.max_output_tokens} for ${model.id}`, 'max_tokens');
      const sampling = checkSampling(model, body);
      if (sampling) throw badRequest(sampling.message, sampling.param);
      if (body.tools?.some((tool) => tool.name === 'web_search' && String(tool.type).startsWith('web_search_')) && !model.capabilities.includes('web_search')) {
        throw badRequest(`${model.id} does not support the web_search tool`, 'tools');
      }
      const headers: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) if (ctx.get(name)) headers[name] = ctx.get(name);
      const request = messagesToUnified(body, model, headers);
      await gateway.admit(ctx, request);
      await gateway.relay(ctx, request, body.stream === true, {
        json: (result) => unifiedToMessages(result, true),
        sse: () => ({ encode: createMessagesEventWriter(true), encodeError: (error) => nativeErrorEvent(ctx, error) }),
      });
    },
  );
  return router;
}
