import { InvalidUpstreamResponseError, parseJsonBody } from '../errors';
import { bodyChunks, joinUrl, postJson, readJson, type TransportSettings } from '../http';
import type { CallOptions, ProviderAdapter, StreamPart, UnifiedRequest, UnifiedResult } from '../types';
import { DEFAULT_ANTHROPIC_VERSION, toAnthropicRequest } from './request';
import { AnthropicResponseSchema, fromAnthropicResponse } from './response';
import { parseAnthropicStream } from './stream';

export interface AnthropicSettings extends Omit<TransportSettings, 'provider'> {
  /** Without the version path, e.g. `https://api.anthropic.com`. */
  baseUrl: string;
  apiKey?: string;
}

/**
 * Anthropic gives no error code for an overlong prompt; its documented signal is a 400
 * `invalid_request_error` whose message begins "prompt is too long". This is the one
 * place a message is inspected, and only its documented prefix.
 */
export function isAnthropicContextOverflow(status: number, body: string): boolean {
  const parsed = parseJsonBody(body) as { error?: { type?: unknown; message?: unknown } } | undefined;
  // "prompt is too long: ...", or "input length and `max_tokens` exceed context limit: ..."
  // (prompt and answer room together past the window): both are the context window's limit.
  const message = String(parsed?.error?.message ?? '');
  return status === 400 && parsed?.error?.type === 'invalid_request_error' && (message.startsWith('prompt is too long') || message.includes('exceed context limit'));
}

export function createAnthropicAdapter(settings: AnthropicSettings): ProviderAdapter {
  const transport: TransportSettings = { ...settings, provider: 'anthropic' };
  const url = joinUrl(settings.baseUrl, 'v1/messages');

  const send = (request: UnifiedRequest, stream: boolean, options: CallOptions) => {
    const headers: Record<string, string> = { 'anthropic-version': request.headers?.['anthropic-version'] ?? DEFAULT_ANTHROPIC_VERSION };
    if (request.headers?.['anthropic-beta']) headers['anthropic-beta'] = request.headers['anthropic-beta'];
    if (settings.apiKey) headers['x-api-key'] = settings.apiKey;
    if (stream) headers.accept = 'text/event-stream';
    return postJson(transport, url, toAnthropicRequest(request, stream), {
      model: request.model.id,
      headers,
      signal: options.signal,
      isContextOverflow: isAnthropicContextOverflow,
    });
  };

  return {
    async generate(request: UnifiedRequest, options: CallOptions = {}): Promise<UnifiedResult> {
      const response = await send(request, false, options);
      const parsed = AnthropicResponseSchema.safeParse(await readJson(response, 'anthropic', request.model.id, options.signal));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable response from anthropic', { provider: 'anthropic', model: request.model.id, retryable: false });
      return fromAnthropicResponse(parsed.data, request.model.name);
    },
    async stream(request: UnifiedRequest, options: CallOptions = {}): Promise<AsyncIterable<StreamPart>> {
      const response = await send(request, true, options);
      return parseAnthropicStream(bodyChunks(response), request);
    },
  };
}
