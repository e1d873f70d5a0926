import { documentAsText, type UnifiedRequest, type Usage } from './types';

/**
 * Rough token estimate: one token per four characters, the usual rule of thumb for
 * English text. Used for bills of streams that broke before the provider reported
 * usage, and by the agent runtime to decide when to compact.
 */
export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 4);

export function estimateRequestTokens(request: Pick<UnifiedRequest, 'system' | 'messages' | 'tools'>): number {
  let chars = 0;
  for (const part of request.system ?? []) chars += part.text.length;
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length;
      else if (part.type === 'tool-call') chars += part.name.length + JSON.stringify(part.input).length;
      else if (part.type === 'tool-result') chars += typeof part.content === 'string' ? part.content.length : JSON.stringify(part.content).length;
      else if (part.type === 'image') chars += 1000 * 4; // images cost roughly a thousand tokens
      // A PDF's text is not known here: about one token per 50 bytes of file (a page of some
      // 100 KB costs a few thousand tokens). An underestimate is caught by the provider's own
      // context-window answer, which the runtime compacts on too.
      else if (part.type === 'document') chars += part.source.type === 'base64' ? Math.ceil((part.source.data.length * 0.75) / 50) * 4 : documentAsText(part).length;
    }
  }
  for (const tool of request.tools ?? []) chars += JSON.stringify(tool).length;
  return estimateTextTokens(' '.repeat(chars));
}

/**
 * Usage for a stream that broke: what the provider reported so far, topped up by estimates,
 * unless the provider had already sent its final count (`final`: the break came after it).
 */
export function partialUsage(reported: Usage, request: UnifiedRequest, producedChars: number, final = false): Usage {
  if (final) return reported;
  const input = reported.input_tokens + reported.cache_read_input_tokens + reported.cache_creation_input_tokens;
  return {
    ...reported,
    input_tokens: input > 0 ? reported.input_tokens : estimateRequestTokens(request),
    output_tokens: Math.max(reported.output_tokens, Math.ceil(producedChars / 4)),
  };
}
