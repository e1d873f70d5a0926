import { toOpenAIFinishReason } from '../finish-reason';
import type { StreamPart, UnifiedResult, UrlCitation, Usage } from '../types';

/** Hub usage → OpenAI usage (cached tokens counted inside prompt_tokens, as OpenAI does). */
export function chatUsage(usage: Usage) {
  const prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output_tokens,
    total_tokens: prompt + usage.output_tokens,
    // Cache writes are part of prompt_tokens but priced apart (Anthropic): named, so a client can reconcile the charge;
    // those of them written to the 1-hour cache (priced higher again) are named too.
    prompt_tokens_details: {
      cached_tokens: usage.cache_read_input_tokens,
      ...(usage.cache_creation_input_tokens > 0 ? { cache_creation_tokens: usage.cache_creation_input_tokens } : {}),
      ...((usage.cache_creation_1h_input_tokens ?? 0) > 0 ? { cache_creation_1h_tokens: usage.cache_creation_1h_input_tokens } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
  };
}

/**
 * A Gemini call's thought signature, where Google's own OpenAI-compatible API puts it
 * (`extra_content.google.thought_signature`); a client sends it back the same way.
 */
const signatureOf = (part: { signature?: string }) => (part.signature ? { extra_content: { google: { thought_signature: part.signature } } } : {});

/** A cited web page as OpenAI's `url_citation` annotation (offsets into the message's `content`). */
const annotation = ({ url, title, start, end }: UrlCitation) => ({ type: 'url_citation' as const, url_citation: { start_index: start, end_index: end, url, title: title ?? '' } });

const chatId = (upstreamId: string): string => (upstreamId.startsWith('chatcmpl-') ? upstreamId : `chatcmpl-${upstreamId}`);

/** Hub result → chat completion object. `model` is the public id the caller asked for. */
export function unifiedToChat(result: UnifiedResult, model: string, created = Math.floor(Date.now() / 1000)) {
  const text = result.content.flatMap((part) => (part.type === 'text' && !part.refusal ? [part.text] : [])).join('');
  const refusal = result.content.flatMap((part) => (part.type === 'text' && part.refusal ? [part.text] : [])).join('');
  const reasoning = result.content.flatMap((part) => (part.type === 'reasoning' ? [part.text] : [])).join('');
  const annotations = (result.url_citations ?? []).map(annotation);
  const toolCalls = result.content.flatMap((part) =>
    part.type === 'tool-call' ? [{ id: part.id, type: 'function' as const, function: { name: part.name, arguments: JSON.stringify(part.input) }, ...signatureOf(part) }] : [],
  );
  return {
    id: chatId(result.id),
    object: 'chat.completion' as const,
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          // (OpenAI answers a refusal with content null.)
          content: text.length > 0 || (toolCalls.length === 0 && !refusal) ? text : null,
          refusal: refusal || null,
          ...(annotations.length > 0 ? { annotations } : {}),
          ...(reasoning ? { reasoning_content: reasoning } : {}),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: toOpenAIFinishReason(result.finish_reason),
      },
    ],
    usage: chatUsage(result.usage),
  };
}

/**
 * Hub stream parts → chat completion chunks (as objects; the route frames them as SSE).
 * Returns no chunk for parts the chat protocol has no place for.
 */
export function createChatChunker(model: string, includeUsage: boolean, created = Math.floor(Date.now() / 1000)) {
  let id = 'chatcmpl-pending';
  const toolIndex = new Map<string, number>();
  const citations: object[] = [];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  return (part: StreamPart): object[] => {
    switch (part.type) {
      case 'stream-start':
        id = chatId(part.id);
        return [chunk({ role: 'assistant', content: '' })];
      case 'text-delta':
        return [chunk(part.refusal ? { refusal: part.delta } : { content: part.delta })];
      case 'url-citation':
        // Held until the finish (or a failure), then sent in one chunk: the openai SDK keeps only
        // the latest delta's `annotations` (it copies unknown delta fields over the message's).
        citations.push(annotation(part.citation));
        return [];
      case 'error':
        return citations.length > 0 ? [chunk({ annotations: citations })] : [];
      case 'reasoning-delta':
        return [chunk({ reasoning_content: part.delta })];
      case 'tool-input-start': {
        const index = toolIndex.size;
        toolIndex.set(part.id, index);
        return [chunk({ tool_calls: [{ index, id: part.id, type: 'function', function: { name: part.name, arguments: '' } }] })];
      }
      case 'tool-input-delta':
        return [chunk({ tool_calls: [{ index: toolIndex.get(part.id) ?? 0, function: { arguments: part.delta } }] })];
      case 'tool-call':
        // A call streamed already: only its signature, if it has one, is left to send.
        if (toolIndex.has(part.id)) return part.signature ? [chunk({ tool_calls: [{ index: toolIndex.get(part.id), ...signatureOf(part) }] })] : [];
        toolIndex.set(part.id, toolIndex.size);
        return [
          chunk({ tool_calls: [{ index: toolIndex.get(part.id), id: part.id, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) }, ...signatureOf(part) }] }),
        ];
      case 'finish': {
        const out: object[] = citations.length > 0 ? [chunk({ annotations: citations })] : [];
        out.push(chunk({}, toOpenAIFinishReason(part.finish_reason)));
        if (includeUsage) out.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: chatUsage(part.usage) });
        return out;
      }
      default:
        return [];
    }
  };
}
