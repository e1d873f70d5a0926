import { z } from 'zod';
import type { UrlCitation } from './types';

/**
 * Web-search citations from each provider, brought to one form (`UrlCitation`: a URL and the
 * span of answer text citing it) so the chat shape can return them as OpenAI's `annotations`.
 */

/** OpenAI's `message.annotations` / `delta.annotations` (only `url_citation` ones are read). */
export const OpenAIAnnotationsSchema = z
  .array(
    z.object({
      type: z.string(),
      url_citation: z.object({ start_index: z.number().int().nonnegative(), end_index: z.number().int().nonnegative(), url: z.string(), title: z.string().nullish() }).nullish(),
    }),
  )
  .nullish()
  .catch(null); // citations are extras: a shape we do not know never fails the answer

export function fromOpenAIAnnotations(annotations: z.infer<typeof OpenAIAnnotationsSchema>): UrlCitation[] {
  return (annotations ?? []).flatMap(({ type, url_citation: cited }) =>
    type === 'url_citation' && cited ? [withTitle({ url: cited.url, start: cited.start_index, end: Math.max(cited.start_index, cited.end_index) }, cited.title)] : [],
  );
}

/**
 * Anthropic cites whole text blocks: each web page a block cites (a citation with a `url`,
 * i.e. `web_search_result_location`) becomes one citation spanning the block, once per URL.
 */
export function fromAnthropicCitations(citations: ReadonlyArray<Record<string, unknown>>, start: number, end: number): UrlCitation[] {
  const seen = new Set<string>();
  return citations.flatMap((citation) => {
    const url = citation.url;
    if (typeof url !== 'string' || seen.has(url)) return [];
    seen.add(url);
    return [withTitle({ url, start, end }, citation.title)];
  });
}

/** Gemini's `groundingMetadata`: sources (`groundingChunks`) and the text segments they support. */
export const GoogleGroundingSchema = z
  .object({
    webSearchQueries: z.array(z.string()).nullish(),
    // (Citations are extras: a shape we do not know never fails the answer, nor its billing.)
    groundingChunks: z.array(z.object({ web: z.object({ uri: z.string().nullish(), title: z.string().nullish() }).nullish() })).nullish().catch(null),
    groundingSupports: z
      .array(
        z.object({
          segment: z.object({ startIndex: z.number().int().nonnegative().nullish(), endIndex: z.number().int().nonnegative().nullish() }).nullish(),
          groundingChunkIndices: z.array(z.number().int().nonnegative()).nullish(),
        }),
      )
      .nullish()
      .catch(null),
  })
  .nullish();

/**
 * Gemini's segments are UTF-8 byte offsets into the answer's text; a citation per (segment,
 * web source) pair, in UTF-16 offsets of `text`.
 */
export function fromGoogleGrounding(grounding: z.infer<typeof GoogleGroundingSchema>, text: string): UrlCitation[] {
  const chunks = grounding?.groundingChunks ?? [];
  const toIndex = utf8OffsetToIndex(text);
  return (grounding?.groundingSupports ?? []).flatMap((support) => {
    const start = toIndex(support.segment?.startIndex ?? 0);
    const end = Math.max(start, toIndex(support.segment?.endIndex ?? 0));
    return (support.groundingChunkIndices ?? []).flatMap((i) => {
      const web = chunks[i]?.web;
      return web?.uri ? [withTitle({ url: web.uri, start, end }, web.title)] : [];
    });
  });
}

/**
 * Citations over a whole answer → the same citations on the text parts that hold their
 * starts, offsets made relative to each part (a span running past its part is cut there).
 */
export function citationsPerPart(texts: readonly string[], citations: readonly UrlCitation[]): UrlCitation[][] {
  const perPart: UrlCitation[][] = texts.map(() => []);
  let offset = 0;
  texts.forEach((text, i) => {
    const end = offset + text.length;
    for (const citation of citations) {
      const last = i === texts.length - 1;
      if (citation.start >= offset && (citation.start < end || (last && citation.start <= end))) {
        perPart[i]!.push({ ...citation, start: citation.start - offset, end: Math.min(citation.end, end) - offset });
      }
    }
    offset = end;
  });
  return perPart;
}

/** A function from a UTF-8 byte offset into `text` to the UTF-16 index of the same place (clamped). */
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

const withTitle = (citation: UrlCitation, title: unknown): UrlCitation => (typeof title === 'string' && title ? { ...citation, title } : citation);
