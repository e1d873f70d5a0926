import { z } from 'zod';
import { mapAnthropicStopReason } from '../finish-reason';
import type { ResultPart, UnifiedResult, Usage } from '../types';

export const AnthropicUsageSchema = z.object({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  cache_creation_input_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
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
  };
}

/** One Anthropic content block → a hub part; blocks the hub does not model stay raw. */
export function fromAnthropicBlock(block: Record<string, unknown>): ResultPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text ?? '') };
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
  return {
    id: body.id,
    model: body.model ?? fallbackModel,
    content: body.content.map(fromAnthropicBlock),
    finish_reason: mapAnthropicStopReason(body.stop_reason),
    stop_sequence: body.stop_sequence ?? null,
    usage: convertAnthropicUsage(body.usage),
  };
}
