import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { mapGoogleFinishReason } from '../finish-reason';
import type { ResultPart, UnifiedResult, Usage } from '../types';
import { fromGroundingSupports, GoogleGroundingSchema, groundingSupports, withCitations } from '../url-citations';

export const GoogleUsageSchema = z
  .object({
    promptTokenCount: z.number().nullish(),
    candidatesTokenCount: z.number().nullish(),
    cachedContentTokenCount: z.number().nullish(),
    thoughtsTokenCount: z.number().nullish(),
    toolUsePromptTokenCount: z.number().nullish(),
  })
  .nullish();

export const GooglePartSchema = z.object({
  text: z.string().nullish(),
  thought: z.boolean().nullish(),
  thoughtSignature: z.string().nullish(),
  functionCall: z.object({ id: z.string().nullish(), name: z.string(), args: z.record(z.string(), z.unknown()).nullish() }).nullish(),
});

export const GoogleResponseSchema = z.object({
  responseId: z.string().nullish(),
  modelVersion: z.string().nullish(),
  candidates: z
    .array(
      z.object({
        content: z.object({ parts: z.array(GooglePartSchema).nullish() }).nullish(),
        finishReason: z.string().nullish(),
        groundingMetadata: GoogleGroundingSchema,
      }),
    )
    .nullish(),
  usageMetadata: GoogleUsageSchema,
  promptFeedback: z.object({ blockReason: z.string().nullish() }).nullish(),
});

/** Gemini counts cached tokens inside the prompt count and thoughts outside the candidates count. */
export function convertGoogleUsage(usage: z.infer<typeof GoogleUsageSchema>): Usage {
  const prompt = (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0);
  const cached = usage?.cachedContentTokenCount ?? 0;
  const thoughts = usage?.thoughtsTokenCount ?? 0;
  return {
    input_tokens: Math.max(0, prompt - cached),
    output_tokens: (usage?.candidatesTokenCount ?? 0) + thoughts,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
    reasoning_tokens: thoughts,
  };
}

/** Google bills each prompt it grounded with Search (one that ran at least one search query). */
export const groundedWithSearch = (candidate: { groundingMetadata?: { webSearchQueries?: string[] | null } | null } | undefined): boolean =>
  (candidate?.groundingMetadata?.webSearchQueries?.length ?? 0) > 0;

/** Usage with the grounded prompt counted as the one search Google bills for it. */
export const withGrounding = (usage: Usage, grounded: boolean): Usage => (grounded ? { ...usage, web_search_requests: 1 } : usage);

/** Gemini function calls may come without ids; the hub needs one to pair results with calls. */
export const newToolCallId = (): string => `call_${randomBytes(12).toString('hex')}`;

export function fromGooglePart(part: z.infer<typeof GooglePartSchema>): ResultPart | undefined {
  if (part.functionCall) {
    const call = { type: 'tool-call' as const, id: part.functionCall.id ?? newToolCallId(), name: part.functionCall.name, input: part.functionCall.args ?? {} };
    return part.thoughtSignature ? { ...call, signature: part.thoughtSignature } : call;
  }
  if (typeof part.text === 'string') {
    if (part.thought) return { type: 'reasoning', text: part.text, ...(part.thoughtSignature ? { signature: part.thoughtSignature } : {}) };
    return { type: 'text', text: part.text };
  }
  return undefined;
}

export function fromGoogleResponse(body: z.infer<typeof GoogleResponseSchema>, fallbackModel: string): UnifiedResult {
  const candidate = body.candidates?.[0];
  const parts = (candidate?.content?.parts ?? []).map(fromGooglePart);
  const content = parts.filter((part): part is ResultPart => part !== undefined);
  const blocked = !candidate && body.promptFeedback?.blockReason;
  return {
    id: body.responseId ?? `gen-${randomBytes(8).toString('hex')}`,
    model: body.modelVersion ?? fallbackModel,
    content,
    finish_reason: blocked
      ? { unified: 'content-filter', raw: body.promptFeedback!.blockReason! }
      : mapGoogleFinishReason(candidate?.finishReason, content.some((part) => part.type === 'tool-call')),
    stop_sequence: null,
    usage: withGrounding(convertGoogleUsage(body.usageMetadata), groundedWithSearch(candidate)),
    ...withCitations(pagesCited(parts, candidate?.groundingMetadata)),
  };
}

/**
 * The web pages a grounded answer cites. A segment counts its bytes within the part its
 * `partIndex` names (thoughts and calls are parts too): that part's start in the answer text.
 */
function pagesCited(parts: Array<ResultPart | undefined>, grounding: z.infer<typeof GoogleGroundingSchema>) {
  const supports = groundingSupports(grounding);
  if (supports.length === 0) return [];
  const startBytes: number[] = [];
  let text = '';
  let bytes = 0;
  for (const part of parts) {
    startBytes.push(bytes);
    if (part?.type !== 'text') continue;
    text += part.text;
    bytes += Buffer.byteLength(part.text);
  }
  return fromGroundingSupports(supports, text, (partIndex) => startBytes[partIndex] ?? bytes);
}
