import type { Deps } from '../../../deps';
import { assertCredits, callerFields, chargeUsage } from '../../../billing/usage';
import { createOpenAIAudioClient } from '../../../providers/openai/audio';
import { createOpenAIImagesClient } from '../../../providers/openai/images';
import { ApiError, badRequest } from '../../errors';
import type { AppContext } from '../../types';
import { createGateway, type Gateway, type GatewayOptions } from '../gateway/gateway';
import { blockListModerator, contentBlocked, type Moderator } from '../gateway/moderation';

export type ContentOperation = 'taxonomy' | 'transcription' | 'image' | 'alt_text' | 'speech';

/** What the content routes share: the chat gateway, the OpenAI media clients, admission and metering. */
export interface ContentServices {
  deps: Deps;
  gateway: Gateway;
  images: ReturnType<typeof createOpenAIImagesClient>;
  audio: ReturnType<typeof createOpenAIAudioClient>;
  /** Moderation of the caller's text (when any goes upstream), then the credit check. */
  admit(ctx: AppContext, texts: string[]): Promise<void>;
  /** Writes the usage row and debits credits; never throws (failures are logged). */
  meter(ctx: AppContext, row: MeterRow): Promise<void>;
}

export interface MeterRow {
  model: string;
  operation: ContentOperation;
  credits_nano: number;
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  reasoning_tokens?: number;
}

export function createContentServices(deps: Deps, options: GatewayOptions = {}): ContentServices {
  const gateway = createGateway(deps, options);
  const moderator: Moderator = options.moderator ?? blockListModerator(deps.config.MODERATION_BLOCKLIST);
  // Media endpoints exist at OpenAI only; they go wherever OpenAI chat goes (the simulator offline).
  const media = { baseUrl: gateway.providers.baseUrls.openai, apiKey: deps.config.OPENAI_API_KEY, timeoutMs: deps.config.UPSTREAM_TIMEOUT_MS };
  return {
    deps,
    gateway,
    images: createOpenAIImagesClient(media),
    audio: createOpenAIAudioClient(media),
    async admit(ctx, texts) {
      if (texts.length > 0 && !(await moderator.allows(texts))) throw contentBlocked();
      const projectId = ctx.state.principal?.projectId;
      if (!projectId) throw new ApiError(403, 'permission_error', 'this credential is not bound to a project');
      await assertCredits(deps.db, projectId);
    },
    async meter(ctx, row) {
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
    },
  };
}

