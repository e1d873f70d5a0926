import type { UnifiedRequest } from '../../../providers/types';
import { ApiError } from '../../errors';

/**
 * Moderation runs before any upstream call. Pluggable: anything with `allows(texts)`.
 * The default is a configured block list (case-insensitive substrings).
 */
export interface Moderator {
  allows(texts: string[]): Promise<boolean> | boolean;
}

export function blockListModerator(list: string): Moderator {
  const terms = list
    .split(',')
    .map((term) => term.trim().toLowerCase())
    .filter(Boolean);
  return {
    allows(texts) {
      if (terms.length === 0) return true;
      return !texts.some((text) => {
        const lower = text.toLowerCase();
        return terms.some((term) => lower.includes(term));
      });
    },
  };
}

/**
 * Everything the caller wrote that reaches the model as text: messages (tool calls' inputs and
 * documents included), tool descriptions and schemas, and a response format's schema.
 */
export function moderatedTexts(request: UnifiedRequest): string[] {
  const texts = (request.system ?? []).map((part) => part.text);
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === 'text') texts.push(part.text);
      else if (part.type === 'tool-result') {
        if (typeof part.content === 'string') texts.push(part.content);
        else {
          for (const p of part.content) {
            if (p.type === 'text') texts.push(p.text);
            else if (p.type === 'provider-raw') rawTexts(p.block, texts);
          }
        }
      }
      else if (part.type === 'tool-call') rawTexts(part.input, texts);
      else if (part.type === 'document') rawTexts({ title: part.title, context: part.context, source: part.source }, texts);
      else if (part.type === 'provider-raw') rawTexts(part.block, texts);
    }
  }
  for (const tool of request.tools ?? []) if (tool.type === 'function') rawTexts({ description: tool.description, schema: tool.input_schema }, texts);
  if (request.response_format?.type === 'json_schema') rawTexts(request.response_format.json_schema, texts);
  return texts;
}

/**
 * The text inside a block forwarded as the caller sent it (a document with a text source, a
 * search result): every string but type tags and base64 data, which no text filter can read.
 */
function rawTexts(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) rawTexts(item, out);
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const [key, item] of Object.entries(record)) {
      if (key === 'type' || key === 'media_type' || (key === 'data' && record.type === 'base64')) continue;
      rawTexts(item, out);
    }
  }
}

/** Deliberately says nothing about which filter matched. */
export const contentBlocked = () => new ApiError(403, 'content_policy_violation', 'the request was blocked by the content policy');
