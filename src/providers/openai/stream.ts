import { z } from 'zod';
import { InvalidUpstreamResponseError, streamFailure, UpstreamConnectionError, UpstreamHttpError } from '../errors';
import { mapOpenAIFinishReason } from '../finish-reason';
import { decodeSse } from '../sse';
import { partialUsage } from '../tokens';
import { parseToolInput } from '../tool-input';
import { emptyUsage, type StreamPart, type UnifiedRequest, type Usage } from '../types';
import { OpenAIUsageSchema, convertOpenAIUsage, withSearchCall } from './response';
import { redactCredentials } from '../redact';
import { fromOpenAIAnnotations, OpenAIAnnotationsSchema } from '../url-citations';

const ChunkSchema = z.object({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            refusal: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
            annotations: OpenAIAnnotationsSchema,
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: OpenAIUsageSchema,
  // (`code` may be absent: zod 4 reads a bare unknown() member as required.)
  error: z.object({ message: z.string().nullish(), code: z.unknown().optional(), type: z.string().nullish() }).nullish(),
});

/** OpenAI SSE chunks → stream parts, in one pass; always ends with `finish` or `error`. */
export async function* parseOpenAIStream(chunks: AsyncIterable<Uint8Array>, request: UnifiedRequest): AsyncGenerator<StreamPart> {
  const provider = 'openai';
  const model = request.model.id;
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let started = false;
  let finishRaw: string | null | undefined;
  let usage: Usage = emptyUsage();
  let usageSeen = false;
  let finalUsage = false;
  let producedChars = 0;
  let done = false;

  function* flushCalls(): Generator<StreamPart> {
    for (const call of [...calls.values()]) yield { type: 'tool-call', id: call.id, name: call.name, input: parseToolInput(call.args) };
    calls.clear();
  }

  try {
    for await (const event of decodeSse(chunks)) {
      if (event.data === '[DONE]') {
        done = true;
        break;
      }
      const parsed = ChunkSchema.safeParse(safeJson(event.data));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable stream chunk from openai', { provider, model, retryable: false });
      const chunk = parsed.data;
      if (chunk.error) {
        throw new UpstreamHttpError('openai reported an error mid-stream', {
          provider,
          model,
          status: openaiStreamErrorStatus(chunk.error),
          body: redactCredentials(JSON.stringify({ error: chunk.error }), []),
          contentType: 'application/json',
        });
      }
      if (!started) {
        started = true;
        yield { type: 'stream-start', id: chunk.id ?? 'chatcmpl-unknown', model: chunk.model ?? request.model.name };
      }
      if (chunk.usage) {
        usage = convertOpenAIUsage(chunk.usage);
        usageSeen = true;
        // Usage after the finish is the call's final count (some compatible servers also send a
        // running count on every chunk before it).
        if (finishRaw !== undefined || chunk.choices?.[0]?.finish_reason) finalUsage = true;
      }
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta;
      const reasoning = delta?.reasoning_content ?? delta?.reasoning;
      if (reasoning) {
        producedChars += reasoning.length;
        yield { type: 'reasoning-delta', delta: reasoning };
      }
      if (delta?.content) {
        producedChars += delta.content.length;
        yield { type: 'text-delta', delta: delta.content };
      }
      for (const citation of fromOpenAIAnnotations(delta?.annotations)) yield { type: 'url-citation', citation };
      if (delta?.refusal) {
        producedChars += delta.refusal.length;
        yield { type: 'text-delta', delta: delta.refusal, refusal: true };
      }
      for (const toolDelta of delta?.tool_calls ?? []) {
        let call = calls.get(toolDelta.index);
        if (!call) {
          call = { id: toolDelta.id ?? `call_${toolDelta.index}`, name: toolDelta.function?.name ?? '', args: '' };
          calls.set(toolDelta.index, call);
          yield { type: 'tool-input-start', id: call.id, name: call.name };
        }
        const args = toolDelta.function?.arguments;
        if (args) {
          call.args += args;
          producedChars += args.length;
          yield { type: 'tool-input-delta', id: call.id, delta: args };
        }
      }
      if (choice.finish_reason) {
        finishRaw = choice.finish_reason;
        yield* flushCalls();
      }
    }
    if (!done && finishRaw === undefined) {
      throw new UpstreamConnectionError('the openai stream ended before it finished', { provider, model, retryable: true });
    }
    yield* flushCalls();
    if (!started) yield { type: 'stream-start', id: 'chatcmpl-unknown', model: request.model.name };
    yield {
      type: 'finish',
      finish_reason: mapOpenAIFinishReason(finishRaw),
      stop_sequence: null,
      usage: withSearchCall(usageSeen ? usage : partialUsage(usage, request, producedChars), request),
    };
  } catch (error) {
    const failure = streamFailure(error, provider, model);
    yield { type: 'error', error: failure, usage: withSearchCall(partialUsage(usage, request, producedChars, finalUsage), request) };
  }
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * An error chunk mid-stream carries no HTTP status: it is read from the error's type or code
 * (OpenAI's names), so a rate limit stays a rate limit (retried with back-off in agent runs).
 */
function openaiStreamErrorStatus(error: { type?: string | null; code?: unknown }): number {
  const names = `${error.type ?? ''} ${typeof error.code === 'string' ? error.code : ''}`;
  if (/rate_limit|insufficient_quota/.test(names)) return 429;
  if (/invalid_api_key|authentication/.test(names)) return 401;
  if (/permission/.test(names)) return 403;
  if (/invalid_request|context_length/.test(names)) return 400;
  if (/overloaded|unavailable/.test(names)) return 503;
  return 500;
}
