import { bodyChunks, joinUrl, postJson, readJson, type TransportSettings } from '../http';
import { InvalidUpstreamResponseError, parseJsonBody } from '../errors';
import type { CallOptions, ProviderAdapter, StreamPart, UnifiedRequest, UnifiedResult } from '../types';
import { toOpenAIRequest } from './request';
import { OpenAIResponseSchema, fromOpenAIResponse, withSearchCall } from './response';
import { parseOpenAIStream } from './stream';

export interface OpenAISettings extends Omit<TransportSettings, 'provider'> {
  /** Base URL including the version, e.g. `https://api.openai.com/v1` or a vLLM/Ollama `.../v1`. */
  baseUrl: string;
  apiKey?: string;
}

/** OpenAI's structured error code for prompts that overflow the context window. */
export function isOpenAIContextOverflow(status: number, body: string): boolean {
  const parsed = parseJsonBody(body) as { error?: { code?: unknown } } | undefined;
  return status === 400 && parsed?.error?.code === 'context_length_exceeded';
}

/** OpenAI chat completions, and any server speaking that protocol (vLLM, Ollama, llama.cpp server). */
export function createOpenAIAdapter(settings: OpenAISettings): ProviderAdapter {
  const transport: TransportSettings = { ...settings, provider: 'openai' };
  const url = joinUrl(settings.baseUrl, 'chat/completions');
  const headers: Record<string, string> = settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {};

  const send = (request: UnifiedRequest, stream: boolean, options: CallOptions) =>
    postJson(transport, url, toOpenAIRequest(request, stream), {
      model: request.model.id,
      headers: stream ? { ...headers, accept: 'text/event-stream' } : headers,
      signal: options.signal,
      isContextOverflow: isOpenAIContextOverflow,
    });

  return {
    async generate(request: UnifiedRequest, options: CallOptions = {}): Promise<UnifiedResult> {
      const response = await send(request, false, options);
      const parsed = OpenAIResponseSchema.safeParse(await readJson(response, 'openai', request.model.id, options.signal));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable response from openai', { provider: 'openai', model: request.model.id, retryable: false });
      const result = fromOpenAIResponse(parsed.data, request.model.name);
      return { ...result, usage: withSearchCall(result.usage, request) };
    },
    async stream(request: UnifiedRequest, options: CallOptions = {}): Promise<AsyncIterable<StreamPart>> {
      const response = await send(request, true, options);
      return parseOpenAIStream(bodyChunks(response), request);
    },
  };
}
