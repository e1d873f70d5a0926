/**
 * Model providers behind one interface.
 *
 *   const providers = createProviderRegistry(config);
 *   const model = findModel('anthropic/claude-sonnet-4-5')!;
 *   const result = await providers.generate({ model, system, messages, tools, max_tokens }, { signal });
 *   for await (const part of await providers.stream(request, { signal })) { ... }
 *
 * Request (`UnifiedRequest`, src/providers/types.ts): `model` is a catalog record;
 * `system` text parts; `messages` alternate `user` / `assistant`, each a list of parts:
 * user `text` | `image` | `tool-result {tool_use_id, content, is_error}`; assistant
 * `text` | `reasoning {text, signature}` | `tool-call {id, name, input}`. Tool results go
 * in the user turn after the assistant turn that made the calls. `tools` are
 * `{type:'function', name, description, input_schema}` or `{type:'web_search', ...}`.
 *
 * `generate` resolves to `UnifiedResult`: `content` parts, `finish_reason` `{unified, raw}`
 * (unified: stop | stop-sequence | length | tool-calls | content-filter | context-window |
 * other; raw: the provider's value) and `usage` {input_tokens (uncached), output_tokens
 * (reasoning included), cache_read_input_tokens, cache_creation_input_tokens,
 * reasoning_tokens}; price it with `computeCreditsNano` from ./catalog.
 *
 * `stream` resolves once the provider accepted the request, to an async iterable of
 * parts: `stream-start`, `text-delta`, `reasoning-delta`, `reasoning-signature`,
 * `tool-input-start`/`tool-input-delta`, `tool-call {id, name, input}`, and last exactly
 * one `finish {finish_reason, usage}` or `error {error, usage}` (usage = what was produced
 * before the break; bill it). Stop iterating (or abort `signal`) to cancel upstream.
 *
 * Failures (./errors): the promise rejects with `UpstreamHttpError` subclasses by
 * status (`status`, `body` verbatim for pass-through, `provider`, `retryable` for
 * 408/409/429/5xx, `retryAfterMs` from Retry-After), `ContextWindowExceededError` when the
 * prompt overflows (compact and retry), `UpstreamTimeoutError` after UPSTREAM_TIMEOUT_MS
 * without an answer, `UpstreamConnectionError`. Adapters never retry: the caller owns retries.
 *
 * Base URLs: a provider with a key uses its configured (or public) base URL; in
 * ENVIRONMENT=development without a key it defaults to SIMULATOR_URL, so every catalog
 * model works offline through its real adapter. OPENAI_BASE_URL may name any
 * OpenAI-compatible server (vLLM, Ollama, llama.cpp server).
 */
import { isDevelopment, type Config } from '../config';
import { createAnthropicAdapter } from './anthropic/adapter';
import type { ProviderName } from './catalog';
import { joinUrl } from './http';
import { createGoogleAdapter } from './google/adapter';
import { createOpenAIAdapter } from './openai/adapter';
import type { CallOptions, ProviderAdapter, StreamPart, UnifiedRequest, UnifiedResult } from './types';

export * from './types';
export * from './errors';
export { findModel, listModels, computeCreditsNano, CATALOG_MAX_OUTPUT_TOKENS, type ModelRecord } from './catalog';
export { anthropicMaxTokens } from './anthropic/request';

export interface ProviderRegistry {
  generate(request: UnifiedRequest, options?: CallOptions): Promise<UnifiedResult>;
  stream(request: UnifiedRequest, options?: CallOptions): Promise<AsyncIterable<StreamPart>>;
  adapter(provider: ProviderName): ProviderAdapter;
  /** Where each provider's requests go (for logs and the readiness page; never includes keys). */
  baseUrls: Record<ProviderName, string>;
}

const PUBLIC_BASE_URLS: Record<ProviderName, string> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
  google: 'https://generativelanguage.googleapis.com',
};

/** The simulator serves each protocol under its provider's usual paths. */
const SIMULATOR_PATHS: Record<ProviderName, string> = { openai: 'v1', anthropic: '', google: '' };

export function resolveBaseUrl(config: Config, provider: ProviderName): string {
  const configured = { openai: config.OPENAI_BASE_URL, anthropic: config.ANTHROPIC_BASE_URL, google: config.GOOGLE_BASE_URL }[provider];
  const key = { openai: config.OPENAI_API_KEY, anthropic: config.ANTHROPIC_API_KEY, google: config.GOOGLE_API_KEY }[provider];
  if (configured) return configured;
  if (!key && isDevelopment(config)) {
    const path = SIMULATOR_PATHS[provider];
    return path ? joinUrl(config.SIMULATOR_URL, path) : config.SIMULATOR_URL.replace(/\/+$/, '');
  }
  return PUBLIC_BASE_URLS[provider];
}

export function createProviderRegistry(config: Config): ProviderRegistry {
  const common = { timeoutMs: config.UPSTREAM_TIMEOUT_MS };
  const baseUrls: Record<ProviderName, string> = {
    openai: resolveBaseUrl(config, 'openai'),
    anthropic: resolveBaseUrl(config, 'anthropic'),
    google: resolveBaseUrl(config, 'google'),
  };
  const adapters: Record<ProviderName, ProviderAdapter> = {
    openai: createOpenAIAdapter({ ...common, baseUrl: baseUrls.openai, apiKey: config.OPENAI_API_KEY }),
    anthropic: createAnthropicAdapter({ ...common, baseUrl: baseUrls.anthropic, apiKey: config.ANTHROPIC_API_KEY }),
    google: createGoogleAdapter({ ...common, baseUrl: baseUrls.google, apiKey: config.GOOGLE_API_KEY }),
  };
  return {
    generate: (request, callOptions) => adapters[request.model.provider].generate(request, callOptions),
    stream: (request, callOptions) => adapters[request.model.provider].stream(request, callOptions),
    adapter: (provider) => adapters[provider],
    baseUrls,
  };
}
