import { InvalidUpstreamResponseError, parseJsonBody } from '../errors';
import { bodyChunks, joinUrl, postJson, readJson, type TransportSettings } from '../http';
import type { CallOptions, ProviderAdapter, StreamPart, UnifiedRequest, UnifiedResult } from '../types';
import { toGoogleRequest } from './request';
import { GoogleResponseSchema, fromGoogleResponse } from './response';
import { parseGoogleStream } from './stream';

export interface GoogleSettings extends Omit<TransportSettings, 'provider'> {
  /** Without the version path, e.g. `https://generativelanguage.googleapis.com`. */
  baseUrl: string;
  apiKey?: string;
}

/**
 * Gemini reports an overlong prompt as 400 INVALID_ARGUMENT with no finer code; the
 * documented message says the input token count "exceeds the maximum number of tokens".
 */
export function isGoogleContextOverflow(status: number, body: string): boolean {
  const parsed = parseJsonBody(body) as { error?: { status?: unknown; message?: unknown } } | undefined;
  return status === 400 && parsed?.error?.status === 'INVALID_ARGUMENT' && /exceeds the maximum number of tokens/.test(String(parsed.error.message ?? ''));
}

export function createGoogleAdapter(settings: GoogleSettings): ProviderAdapter {
  const transport: TransportSettings = { ...settings, provider: 'google' };
  const headers: Record<string, string> = settings.apiKey ? { 'x-goog-api-key': settings.apiKey } : {};

  const send = (request: UnifiedRequest, stream: boolean, options: CallOptions) => {
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    const url = joinUrl(settings.baseUrl, `v1beta/models/${encodeURIComponent(request.model.name)}:${method}`);
    return postJson(transport, url, toGoogleRequest(request), {
      model: request.model.id,
      headers: stream ? { ...headers, accept: 'text/event-stream' } : headers,
      signal: options.signal,
      isContextOverflow: isGoogleContextOverflow,
    });
  };

  return {
    async generate(request: UnifiedRequest, options: CallOptions = {}): Promise<UnifiedResult> {
      const response = await send(request, false, options);
      const parsed = GoogleResponseSchema.safeParse(await readJson(response, 'google', request.model.id, options.signal));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable response from google', { provider: 'google', model: request.model.id, retryable: false });
      return fromGoogleResponse(parsed.data, request.model.name);
    },
    async stream(request: UnifiedRequest, options: CallOptions = {}): Promise<AsyncIterable<StreamPart>> {
      const response = await send(request, true, options);
      return parseGoogleStream(bodyChunks(response), request);
    },
  };
}
