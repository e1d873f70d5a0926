import { z } from 'zod';
import { InvalidUpstreamResponseError, streamFailure, UpstreamConnectionError, UpstreamHttpError } from '../errors';
import { mapAnthropicStopReason } from '../finish-reason';
import { safeJson } from '../openai/stream';
import { decodeSse } from '../sse';
import { partialUsage } from '../tokens';
import { parseToolInput } from '../tool-input';
import { emptyUsage, type FinishReason, type StreamPart, type UnifiedRequest, type Usage } from '../types';
import { AnthropicUsageSchema, convertAnthropicUsage } from './response';
import { anthropicErrorStatus } from './error-types';
import { redactCredentials } from '../redact';
import { fromAnthropicCitations } from '../url-citations';

const EventSchema = z.object({
  type: z.string(),
  index: z.number().nullish(),
  message: z.object({ id: z.string(), model: z.string().nullish(), usage: AnthropicUsageSchema.nullish() }).nullish(),
  content_block: z.looseObject({ type: z.string() }).nullish(),
  delta: z
    .object({
      type: z.string().nullish(),
      text: z.string().nullish(),
      partial_json: z.string().nullish(),
      thinking: z.string().nullish(),
      signature: z.string().nullish(),
      citation: z.looseObject({}).nullish(),
      stop_reason: z.string().nullish(),
      stop_sequence: z.string().nullish(),
    })
    .nullish(),
  usage: AnthropicUsageSchema.nullish(),
  error: z.object({ type: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

type Block =
  | { kind: 'tool'; id: string; name: string; json: string }
  | { kind: 'raw'; block: Record<string, unknown>; json: string }
  // `start`: where the block's text begins in the answer's text, for the web pages it cites.
  | { kind: 'text'; start: number; citations: Array<Record<string, unknown>> }
  | { kind: 'plain' };

/** Anthropic's event protocol → stream parts, in one pass; always ends with `finish` or `error`. */
export async function* parseAnthropicStream(chunks: AsyncIterable<Uint8Array>, request: UnifiedRequest): AsyncGenerator<StreamPart> {
  const provider = 'anthropic';
  const model = request.model.id;
  const blocks = new Map<number, Block>();
  let usage: Usage = emptyUsage();
  let finish: FinishReason | undefined;
  let stopSequence: string | null = null;
  let producedChars = 0;
  let textLength = 0; // of the answer's text so far
  let stopped = false;
  let finalUsage = false; // the closing message_delta brought the final count
  // Web searches whose results the stream showed (a `web_search_tool_result` holding results; a
  // failed search, e.g. past max_uses, holds an error and is not billed): when the stream breaks
  // before the closing count, their fee is still owed. The closing count, when it came, decides.
  let searchesSeen = 0;
  try {
    for await (const sse of decodeSse(chunks)) {
      const parsed = EventSchema.safeParse(safeJson(sse.data));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable stream event from anthropic', { provider, model, retryable: false });
      const event = parsed.data;
      switch (event.type) {
        case 'message_start':
          usage = convertAnthropicUsage(event.message?.usage);
          yield { type: 'stream-start', id: event.message?.id ?? 'msg_unknown', model: event.message?.model ?? request.model.name, usage };
          break;
        case 'content_block_start': {
          const block = event.content_block ?? { type: 'text' };
          const index = event.index ?? 0;
          if (block.type === 'tool_use') {
            blocks.set(index, { kind: 'tool', id: String(block.id), name: String(block.name), json: '' });
            yield { type: 'tool-input-start', id: String(block.id), name: String(block.name) };
          } else if (block.type === 'redacted_thinking') {
            blocks.set(index, { kind: 'plain' });
            yield { type: 'redacted-reasoning', data: String(block.data ?? '') };
          } else if (block.type === 'text') {
            blocks.set(index, { kind: 'text', start: textLength, citations: [] });
            yield { type: 'text-block-start', cited: Array.isArray(block.citations) };
            // A block may start with content already in it.
            if (typeof block.text === 'string' && block.text) {
              textLength += block.text.length;
              yield { type: 'text-delta', delta: block.text };
            }
          } else if (block.type === 'thinking') {
            blocks.set(index, { kind: 'plain' });
          } else {
            if (block.type === 'web_search_tool_result' && Array.isArray(block.content)) searchesSeen++;
            blocks.set(index, { kind: 'raw', block: { ...block }, json: '' });
          }
          break;
        }
        case 'content_block_delta': {
          const delta = event.delta;
          const block = blocks.get(event.index ?? 0);
          if (delta?.type === 'text_delta' && delta.text) {
            producedChars += delta.text.length;
            textLength += delta.text.length;
            yield { type: 'text-delta', delta: delta.text };
          } else if (delta?.type === 'thinking_delta' && delta.thinking) {
            producedChars += delta.thinking.length;
            yield { type: 'reasoning-delta', delta: delta.thinking };
          } else if (delta?.type === 'citations_delta' && delta.citation) {
            if (block?.kind === 'text') block.citations.push(delta.citation);
            yield { type: 'text-citation', citation: delta.citation };
          } else if (delta?.type === 'signature_delta' && delta.signature) {
            yield { type: 'reasoning-signature', signature: delta.signature };
          } else if (delta?.type === 'input_json_delta' && delta.partial_json) {
            producedChars += delta.partial_json.length;
            if (block?.kind === 'tool') {
              block.json += delta.partial_json;
              yield { type: 'tool-input-delta', id: block.id, delta: delta.partial_json };
            } else if (block?.kind === 'raw') block.json += delta.partial_json;
          }
          break;
        }
        case 'content_block_stop': {
          const index = event.index ?? 0;
          const block = blocks.get(index);
          if (block?.kind === 'tool') yield { type: 'tool-call', id: block.id, name: block.name, input: parseToolInput(block.json) };
          if (block?.kind === 'text') {
            for (const citation of fromAnthropicCitations(block.citations, block.start, textLength)) yield { type: 'url-citation', citation };
          }
          if (block?.kind === 'raw') {
            const raw = block.json ? { ...block.block, input: parseToolInput(block.json) } : block.block;
            yield { type: 'provider-raw', provider, block: raw };
          }
          blocks.delete(index);
          break;
        }
        case 'message_delta':
          if (event.delta?.stop_reason) finish = mapAnthropicStopReason(event.delta.stop_reason);
          if (event.delta?.stop_sequence) stopSequence = event.delta.stop_sequence;
          if (event.usage) {
            // The message's final usage (its closing delta carries the stop reason).
            finalUsage = Boolean(event.delta?.stop_reason);
            // message_delta usage is cumulative; fields it omits keep their message_start value.
            const next = convertAnthropicUsage(event.usage);
            usage = {
              input_tokens: event.usage.input_tokens != null ? next.input_tokens : usage.input_tokens,
              output_tokens: event.usage.output_tokens != null ? next.output_tokens : usage.output_tokens,
              cache_read_input_tokens: event.usage.cache_read_input_tokens != null ? next.cache_read_input_tokens : usage.cache_read_input_tokens,
              cache_creation_input_tokens:
                event.usage.cache_creation_input_tokens != null ? next.cache_creation_input_tokens : usage.cache_creation_input_tokens,
              reasoning_tokens: 0,
              ...(event.usage.cache_creation != null ? pick(next, 'cache_creation_1h_input_tokens') : pick(usage, 'cache_creation_1h_input_tokens')),
              ...(event.usage.server_tool_use != null ? pick(next, 'web_search_requests') : pick(usage, 'web_search_requests')),
            };
          }
          break;
        case 'message_stop':
          stopped = true;
          break;
        case 'error':
          throw new UpstreamHttpError('anthropic reported an error mid-stream', {
            provider,
            model,
            status: anthropicErrorStatus(event.error?.type),
            body: redactCredentials(JSON.stringify({ type: 'error', error: event.error }), []),
            contentType: 'application/json',
          });
        default:
          break; // ping and future event types
      }
      if (stopped) break;
    }
    if (!stopped) throw new UpstreamConnectionError('the anthropic stream ended before message_stop', { provider, model, retryable: true });
    yield { type: 'finish', finish_reason: finish ?? mapAnthropicStopReason(null), stop_sequence: stopSequence, usage };
  } catch (error) {
    const failure = streamFailure(error, provider, model);
    const partial = partialUsage(usage, request, producedChars, finalUsage);
    const searched = !finalUsage && searchesSeen > (partial.web_search_requests ?? 0) ? { web_search_requests: searchesSeen } : {};
    yield { type: 'error', error: failure, usage: { ...partial, ...searched } };
  }
}

/** `{key: value}` when the usage has that optional count, else nothing. */
const pick = <K extends 'cache_creation_1h_input_tokens' | 'web_search_requests'>(usage: Usage, key: K): Partial<Pick<Usage, K>> =>
  usage[key] !== undefined ? ({ [key]: usage[key] } as Partial<Pick<Usage, K>>) : {};
