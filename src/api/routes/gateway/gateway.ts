import type { Deps } from '../../../deps';
import { shutdownSignals } from '../../../net/graceful-close';
import { callerFields, chargeUsage } from '../../../billing/usage';
import { creditAdmissionFor } from '../../../billing/admission';
import { computeCreditsNano, type ModelRecord } from '../../../providers/catalog';
import { ProviderError, UpstreamConnectionError, UpstreamHttpError, UpstreamTimeoutError } from '../../../providers/errors';
import { createProviderRegistry, type ProviderRegistry } from '../../../providers';
import type { UnifiedRequest, UnifiedResult, Usage } from '../../../providers/types';
import { ApiError } from '../../errors';
import type { AppContext } from '../../types';
import { blockListModerator, contentBlocked, moderatedTexts, type Moderator } from './moderation';
import { shuttingDown, startedStream, writeSse, type SseProtocol } from './sse';

export interface GatewayOptions {
  providers?: ProviderRegistry;
  moderator?: Moderator;
}

/** A usage row of any metered operation (chat, or a content helper's). */
export interface MeterRow {
  model: string;
  operation: 'chat' | 'taxonomy' | 'transcription' | 'image' | 'alt_text' | 'speech';
  credits_nano: number;
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  reasoning_tokens?: number;
}

/** How a chat-like route answers: the whole result as its JSON, or a stream in its SSE protocol. */
export interface ChatShape {
  json(result: UnifiedResult): unknown;
  /** A fresh protocol per response (encoders keep state across parts). */
  sse(): SseProtocol;
}

/** What every metered route shares: admission, upstream calls, failures, metering. */
export interface Gateway {
  providers: ProviderRegistry;
  /** Moderation of the request's texts, then the credit check: both before any upstream call. */
  admit(ctx: AppContext, request: UnifiedRequest): Promise<void>;
  /** The same for a request that is not a chat request: `texts` are what goes upstream of the caller's. */
  admitTexts(ctx: AppContext, texts: string[]): Promise<void>;
  /** Aborts when the client goes away before the response is complete. */
  clientSignal(ctx: AppContext): AbortSignal;
  /** Writes a metered operation's usage row and debits credits; never throws (failures are logged). */
  meterRow(ctx: AppContext, row: MeterRow): Promise<void>;
  /**
   * One unstreamed model call for an admitted request, metered as `operation` (whether or not
   * the caller can use the answer: the tokens were spent). Undefined when the call failed and
   * the failure was relayed as the response.
   */
  generate(ctx: AppContext, request: UnifiedRequest, operation: MeterRow['operation']): Promise<UnifiedResult | undefined>;
  /**
   * Calls the model for an admitted request and answers in the route's shape, streamed or
   * not: an upstream failure before the first byte is relayed as such; usage is metered.
   */
  relay(ctx: AppContext, request: UnifiedRequest, stream: boolean, shape: ChatShape): Promise<void>;
}

export function createGateway(deps: Deps, options: GatewayOptions = {}): Gateway {
  const providers = options.providers ?? createProviderRegistry(deps.config);
  const moderator = options.moderator ?? blockListModerator(deps.config.MODERATION_BLOCKLIST);
  const credits = creditAdmissionFor(deps.db, deps.config.DATABASE_URL, deps.logger);
  const admitTexts = async (ctx: AppContext, texts: string[]) => {
    if (texts.length > 0 && !(await moderator.allows(texts))) throw contentBlocked();
    // (authenticate's billsProject refuses such a credential first on every metered route.)
    const projectId = ctx.state.principal?.projectId;
    if (!projectId) throw new ApiError(403, 'permission_error', 'this credential is not bound to a project');
    // assertCredits' rule, without a balance read for projects known to be positive.
    await credits.admit(projectId);
  };
  const meterRow = async (ctx: AppContext, row: MeterRow) => {
    try {
      await chargeUsage(deps.db, {
        ...callerFields(ctx.state.principal!, ctx.get('x-application') || undefined),
        model: row.model,
        operation: row.operation,
        input_tokens: row.input_tokens ?? 0,
        output_tokens: row.output_tokens ?? 0,
        cache_read_input_tokens: row.cache_read_input_tokens ?? 0,
        cache_creation_input_tokens: row.cache_creation_input_tokens ?? 0,
        reasoning_tokens: row.reasoning_tokens ?? 0,
        credits_nano: row.credits_nano,
        requestId: ctx.state.requestId,
      });
    } catch (error) {
      ctx.state.log.error({ err: error, model: row.model, operation: row.operation, credits_nano: row.credits_nano }, 'metering failed');
    }
  };
  const meter = (ctx: AppContext, model: ModelRecord, usage: Usage, operation: MeterRow['operation'] = 'chat') =>
    meterRow(ctx, { model: model.id, operation, credits_nano: computeCreditsNano(model, usage), ...usage });
  const clientSignal = (ctx: AppContext) => {
    const controller = new AbortController();
    // Also when a shutdown's drain window is over (src/net/graceful-close.ts): the upstream call
    // stops at once (a stream has its protocol's error ending written first, by sse.ts).
    const { ending } = shutdownSignals(ctx.req);
    const onEnding = () => controller.abort(new Error('the server is shutting down'));
    ending.addEventListener('abort', onEnding, { once: true });
    ctx.res.once('close', () => {
      ending.removeEventListener('abort', onEnding);
      if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
    });
    return controller.signal;
  };
  const generate = async (ctx: AppContext, request: UnifiedRequest, operation: MeterRow['operation']) => {
    let result;
    try {
      result = await providers.generate(request, { signal: clientSignal(ctx) });
    } catch (error) {
      // Cancelled because a shutdown's drain window is over: the client sends it again elsewhere.
      if (shutdownSignals(ctx.req).ending.aborted) throw shuttingDown();
      relayUpstreamFailure(ctx, error);
      return undefined;
    }
    // (The response does not wait for its metering; a failure there is logged.)
    void meter(ctx, request.model, result.usage, operation);
    return result;
  };
  return {
    providers,
    admit: (ctx, request) => admitTexts(ctx, moderatedTexts(request)),
    admitTexts,
    clientSignal,
    meterRow,
    generate,
    async relay(ctx, request, stream, shape) {
      if (!stream) {
        const result = await generate(ctx, request, 'chat');
        if (result) ctx.body = shape.json(result);
        return;
      }
      let parts;
      try {
        parts = await startedStream(await providers.stream(request, { signal: clientSignal(ctx) }));
      } catch (error) {
        return relayUpstreamFailure(ctx, error);
      }
      const usage = await writeSse(ctx, parts, shape.sse(), request);
      if (usage) await meter(ctx, request.model, usage);
    },
  };
}

/**
 * An upstream failure before any response byte went out. Provider HTTP errors pass
 * through with the provider's status and body; timeouts and connection failures become
 * gateway errors (504 / 502).
 */
export function relayUpstreamFailure(ctx: AppContext, error: unknown): void {
  if (error instanceof UpstreamHttpError) {
    ctx.state.log.warn({ provider: error.provider, model: error.model, status: error.status, upstream_request_id: error.upstreamRequestId }, 'upstream error');
    // An error with no body has nothing to pass on: the gateway's envelope says it, same status.
    // Nor is a status that is no error relayed (a redirect the transport could not follow, say
    // one without Location): a client would read a 3xx as "look elsewhere". Both 502.
    if (error.body.trim() === '' || error.status < 400) throw toGatewayError(error);
    ctx.status = error.status;
    ctx.type = error.contentType;
    for (const [name, value] of Object.entries(retryAfterHeader(error))) ctx.set(name, value);
    ctx.body = error.body;
    return;
  }
  throw toGatewayError(error);
}

export function toGatewayError(error: unknown): unknown {
  if (error instanceof UpstreamTimeoutError) return new ApiError(504, 'upstream_error', 'the model provider did not answer in time');
  if (error instanceof UpstreamConnectionError) return new ApiError(502, 'upstream_error', 'the model provider could not be reached');
  if (error instanceof UpstreamHttpError) {
    return new ApiError(error.status >= 400 ? error.status : 502, 'upstream_error', 'the model provider returned an error', { headers: retryAfterHeader(error) });
  }
  if (error instanceof ProviderError) return new ApiError(502, 'upstream_error', 'the model provider returned an unreadable response');
  return error;
}

/** The provider's back-off hint, passed on in whole seconds. */
const retryAfterHeader = (error: UpstreamHttpError): Record<string, string> =>
  error.retryAfterMs !== undefined ? { 'Retry-After': String(Math.ceil(error.retryAfterMs / 1000)) } : {};
