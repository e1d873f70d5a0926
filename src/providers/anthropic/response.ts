import { z } from 'zod';
import { mapAnthropicStopReason } from '../finish-reason';
import type { ResultPart, UnifiedResult, UrlCitation, Usage } from '../types';
import { fromAnthropicCitations, withCitations } from '../url-citations';

export const AnthropicUsageSchema = z.object({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  cache_creation_input_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
  cache_creation: z.object({ ephemeral_1h_input_tokens: z.number().nullish() }).nullish(),
  server_tool_use: z.object({ web_search_requests: z.number().nullish() }).nullish(),
});

export const AnthropicResponseSchema = z.object({
  id: z.string(),
  model: z.string().nullish(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  stop_sequence: z.string().nullish(),
  usage: AnthropicUsageSchema.nullish(),
});

/** Anthropic already reports cache reads and writes apart from `input_tokens`. */
export function convertAnthropicUsage(usage: z.infer<typeof AnthropicUsageSchema> | null | undefined): Usage {
  return {
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    reasoning_tokens: 0,
    ...billedExtras(usage),
  };
}

/** The 1-hour cache writes and web searches, when Anthropic reports them (both priced apart). */
function billedExtras(usage: z.infer<typeof AnthropicUsageSchema> | null | undefined): Pick<Usage, 'cache_creation_1h_input_tokens' | 'web_search_requests'> {
  const oneHour = usage?.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const searches = usage?.server_tool_use?.web_search_requests ?? 0;
  return { ...(oneHour > 0 ? { cache_creation_1h_input_tokens: oneHour } : {}), ...(searches > 0 ? { web_search_requests: searches } : {}) };
}

/** One Anthropic content block → a hub part; blocks the hub does not model stay raw. */
export function fromAnthropicBlock(block: Record<string, unknown>): ResultPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text ?? ''), ...(Array.isArray(block.citations) && block.citations.length > 0 ? { citations: block.citations as Array<Record<string, unknown>> } : {}) };
    case 'thinking':
      return { type: 'reasoning', text: String(block.thinking ?? ''), ...(typeof block.signature === 'string' ? { signature: block.signature } : {}) };
    case 'redacted_thinking':
      return { type: 'redacted-reasoning', data: String(block.data ?? '') };
    case 'tool_use':
      return { type: 'tool-call', id: String(block.id), name: String(block.name), input: (block.input as Record<string, unknown>) ?? {} };
    default:
      return { type: 'provider-raw', provider: 'anthropic', block };
  }
}

export function fromAnthropicResponse(body: z.infer<typeof AnthropicResponseSchema>, fallbackModel: string): UnifiedResult {
  const content = body.content.map(fromAnthropicBlock);
  return {
    id: body.id,
    model: body.model ?? fallbackModel,
    content,
    ...withCitations(pagesCited(content)),
    finish_reason: mapAnthropicStopReason(body.stop_reason),
    stop_sequence: body.stop_sequence ?? null,
    usage: convertAnthropicUsage(body.usage),
  };
}

/** The web pages the answer's text blocks cite, each spanning its block in the joined text. */
function pagesCited(content: ResultPart[]): UrlCitation[] {
  let offset = 0;
  return content.flatMap((part) => {
    if (part.type !== 'text') return [];
    const start = offset;
    offset += part.text.length;
    return fromAnthropicCitations(part.citations ?? [], start, offset);
  });
}
