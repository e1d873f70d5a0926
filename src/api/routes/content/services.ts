import type { Deps } from '../../../deps';
import { createOpenAIAudioClient } from '../../../providers/openai/audio';
import { createOpenAIImagesClient } from '../../../providers/openai/images';
import { createGateway, type Gateway, type GatewayOptions } from '../gateway/gateway';

/**
 * What the content routes share: the gateway (admission with `admitTexts`, metering with
 * `meterRow`, as the chat routes are admitted and metered) and the OpenAI media clients.
 */
export interface ContentServices {
  deps: Deps;
  gateway: Gateway;
  images: ReturnType<typeof createOpenAIImagesClient>;
  audio: ReturnType<typeof createOpenAIAudioClient>;
}

export function createContentServices(deps: Deps, options: GatewayOptions = {}): ContentServices {
  const gateway = createGateway(deps, options);
  // Media endpoints exist at OpenAI only; they go wherever OpenAI chat goes (the simulator offline).
  const media = { baseUrl: gateway.providers.baseUrls.openai, apiKey: deps.config.OPENAI_API_KEY, timeoutMs: deps.config.UPSTREAM_TIMEOUT_MS };
  return {
    deps,
    gateway,
    images: createOpenAIImagesClient(media),
    audio: createOpenAIAudioClient(media),
  };
}
