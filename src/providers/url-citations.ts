import { z } from 'zod';
import type { UrlCitation } from './types';

/**
 * Web-search citations from each provider, brought to one form (`UrlCitation`: a URL and the
 * span of the answer's text citing it) so the chat shape can return them as OpenAI's
 * `annotations`. Citations are extras: an entry of a shape we do not know is skipped, and
 * never fails the answer (nor its billing).
 */

/** An array whose unreadable entries are dropped (and which is dropped whole if not an array). */
const lenientArray = <T extends z.ZodType>(item: T) =>
  z
    .array(item.nullable().catch(null))
    .transform((items) => items.filter((entry): entry is NonNullable<z.output<T>> => entry != null))
    .nullish()
    .catch(null);

/** OpenAI's `message.annotations` / `delta.annotations` (only `url_citation` ones are read). */
export const OpenAIAnnotationsSchema = lenientArray(
  z.object({
    type: z.string(),
    url_citation: z.object({ start_index: z.number().int().nonnegative(), end_index: z.number().int().nonnegative(), url: z.string(), title: z.string().nullish() }).nullish(),
  }),
);

/** OpenAI's offsets are into the message's content already. */
export function fromOpenAIAnnotations(annotations: z.infer<typeof OpenAIAnnotationsSchema>): UrlCitation[] {
  return (annotations ?? []).flatMap(({ type, url_citation: cited }) =>
    type === 'url_citation' && cited && cited.end_index > cited.start_index ? [withTitle({ url: cited.url, start: cited.start_index, end: cited.end_index }, cited.title)] : [],
  );
}

/**
 * Anthropic cites whole text blocks: each web page a block cites (a citation with a `url`,
 * i.e. `web_search_result_location`) becomes one citation spanning the block, once per URL.
 */
export function fromAnthropicCitations(citations: readonly unknown[], start: number, end: number): UrlCitation[] {
  const seen = new Set<string>();
  return citations.flatMap((citation) => {
    const url = citation && typeof citation === 'object' ? (citation as Record<string, unknown>).url : undefined;
    if (typeof url !== 'string' || seen.has(url) || end <= start) return [];
    seen.add(url);
    return [withTitle({ url, start, end }, (citation as Record<string, unknown>).title)];
  });
}

/** Gemini's `groundingMetadata`: sources (`groundingChunks`) and the text segments they support. */
export const GoogleGroundingSchema = z
  .object({
    webSearchQueries: z.array(z.string()).nullish(),
    groundingChunks: lenientArray(z.object({ web: z.object({ uri: z.string().nullish(), title: z.string().nullish() }).nullish() })),
    groundingSupports: lenientArray(
      z.object({
        segment: z
          .object({ partIndex: z.number().int().nonnegative().nullish(), startIndex: z.number().int().nonnegative().nullish(), endIndex: z.number().int().nonnegative().nullish() })
          .nullish(),
        groundingChunkIndices: z.array(z.number().int().nonnegative()).nullish(),
      }),
    ),
  })
  .nullish();

/** A Gemini support of one web page, its segment still in UTF-8 bytes (`partIndex`: the part they count in). */
export interface GroundingSupport {
  url: string;
  title?: string;
  partIndex?: number;
  startByte: number;
  endByte: number;
}

/** The (segment, page) pairs of a grounding, its chunk indices resolved to the pages they name. */
export function groundingSupports(grounding: z.infer<typeof GoogleGroundingSchema>): GroundingSupport[] {
  const chunks = grounding?.groundingChunks ?? [];
  return (grounding?.groundingSupports ?? []).flatMap(({ segment, groundingChunkIndices }) =>
    (groundingChunkIndices ?? []).flatMap((i) => {
      const web = chunks[i]?.web;
      if (!web?.uri) return [];
      const support: GroundingSupport = { url: web.uri, startByte: segment?.startIndex ?? 0, endByte: segment?.endIndex ?? 0 };
      if (segment?.partIndex != null) support.partIndex = segment.partIndex;
      if (web.title) support.title = web.title;
      return [support];
    }),
  );
}

/**
 * Supports → citations over `text`, the answer's text. Gemini counts a segment in UTF-8 bytes
 * within the part `partIndex` names; `partStartByte` says where that part begins in the answer
 * (absent, or for a segment without `partIndex`: the answer's start). Spans outside the text
 * or empty are dropped; repeats are kept once.
 */
export function fromGroundingSupports(supports: readonly GroundingSupport[], text: string, partStartByte: (partIndex: number) => number = () => 0): UrlCitation[] {
  if (supports.length === 0) return []; // (the offset table costs a pass over the text)
  const toIndex = utf8OffsetToIndex(text);
  const seen = new Set<string>();
  return supports.flatMap((support) => {
    const base = support.partIndex != null ? partStartByte(support.partIndex) : 0;
    const start = toIndex(base + support.startByte);
    const end = toIndex(base + support.endByte);
    const key = JSON.stringify([support.url, start, end]);
    if (end <= start || seen.has(key)) return [];
    seen.add(key);
    return [withTitle({ url: support.url, start, end }, support.title)];
  });
}

/** A function from a UTF-8 byte offset into `text` to the UTF-16 index of the same place (clamped to the text). */
function utf8OffsetToIndex(text: string): (bytes: number) => number {
  const bytes: number[] = []; // bytes[i] = UTF-8 offset of UTF-16 index i
  let offset = 0;
  for (let i = 0; i < text.length; i++) {
    bytes.push(offset);
    const code = text.codePointAt(i)!;
    if (code > 0xffff) {
      bytes.push(offset); // the low surrogate shares its code point's offset
      i++;
      offset += 4;
    } else offset += code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
  }
  bytes.push(offset);
  return (target) => {
    let lo = 0;
    let hi = bytes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (bytes[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** The result field, when there is anything to put in it. */
export const withCitations = (citations: UrlCitation[]): { url_citations?: UrlCitation[] } => (citations.length > 0 ? { url_citations: citations } : {});

const withTitle = (citation: UrlCitation, title: unknown): UrlCitation => (typeof title === 'string' && title ? { ...citation, title } : citation);
