import { z } from 'zod';
import { mapOpenAIFinishReason } from '../finish-reason';
import type { ResultPart, UnifiedRequest, UnifiedResult, Usage } from '../types';
import { parseToolInput } from '../tool-input';
import { fromOpenAIAnnotations, OpenAIAnnotationsSchema, withCitations } from '../url-citations';

// Only the fields we read; OpenAI-compatible servers omit many of them.
export const OpenAIUsageSchema = z
  .object({
    prompt_tokens: z.number().nullish(),
    completion_tokens: z.number().nullish(),
    prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
    completion_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
  })
  .nullish();

const ToolCallSchema = z.object({
  id: z.string().nullish(),
  function: z.object({ name: z.string(), arguments: z.string().nullish() }),
});

export const OpenAIResponseSchema = z.object({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z.array(
    z.object({
      message: z.object({
        content: z.string().nullish(),
        refusal: z.string().nullish(),
        reasoning_content: z.string().nullish(),
        reasoning: z.string().nullish(),
        tool_calls: z.array(ToolCallSchema).nullish(),
        annotations: OpenAIAnnotationsSchema,
      }),
      finish_reason: z.string().nullish(),
    }),
  ).min(1), // an answer without a choice is no answer: the call failed
  usage: OpenAIUsageSchema,
});

/** OpenAI counts cached tokens inside `prompt_tokens`; the hub keeps them apart. */
export function convertOpenAIUsage(usage: z.infer<typeof OpenAIUsageSchema>): Usage {
  const prompt = usage?.prompt_tokens ?? 0;
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, prompt - cached),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
    reasoning_tokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

/**
 * OpenAI's search models (the catalog's OpenAI models with `web_search`) search on every
 * call, and each call is billed as one search.
 */
export const withSearchCall = (usage: Usage, request: UnifiedRequest): Usage =>
  request.model.capabilities.includes('web_search') ? { ...usage, web_search_requests: 1 } : usage;

export function fromOpenAIResponse(body: z.infer<typeof OpenAIResponseSchema>, fallbackModel: string): UnifiedResult {
  const choice = body.choices[0];
  const content: ResultPart[] = [];
  const reasoning = choice?.message.reasoning_content ?? choice?.message.reasoning;
  if (reasoning) content.push({ type: 'reasoning', text: reasoning });
  if (choice?.message.content) content.push({ type: 'text', text: choice.message.content });
  if (choice?.message.refusal) content.push({ type: 'text', text: choice.message.refusal, refusal: true });
  for (const [index, call] of (choice?.message.tool_calls ?? []).entries()) {
    content.push({ type: 'tool-call', id: call.id ?? `call_${index}`, name: call.function.name, input: parseToolInput(call.function.arguments ?? '') });
  }
  return {
    id: body.id ?? 'chatcmpl-unknown',
    model: body.model ?? fallbackModel,
    content,
    finish_reason: mapOpenAIFinishReason(choice?.finish_reason),
    stop_sequence: null,
    usage: convertOpenAIUsage(body.usage),
    ...withCitations(fromOpenAIAnnotations(choice?.message.annotations)),
  };
}
