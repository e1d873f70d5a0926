import { z } from 'zod';

/**
 * Field helpers shared by the agent, session and event schemas. Lengths the spec gives
 * in "chars" count Unicode code points, not UTF-16 units, so an emoji is one character.
 */
export const codePoints = (value: string): number => [...value].length;
export const utf8Bytes = (value: string): number => Buffer.byteLength(value, 'utf8');

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A string of at most `max` characters (code points). */
export const chars = (max: number) =>
  z.string({ error: 'must be a string' }).refine((v) => codePoints(v) <= max, `must be at most ${max} characters`);

/** A string of 1..max characters that is not only whitespace. */
export const nonEmptyChars = (max: number) =>
  chars(max).refine((v) => v.trim().length > 0, 'must not be empty');

/** Any JSON object (open: any keys). */
export const openObject = z.custom<Record<string, unknown>>(isPlainObject, 'must be a JSON object');

export const METADATA_LIMITS = { keys: 16, keyChars: 64, valueChars: 512 } as const;

export const metadataKey = z
  .string()
  .min(1, 'metadata keys must not be empty')
  .refine((k) => codePoints(k) <= METADATA_LIMITS.keyChars, `metadata keys must be at most ${METADATA_LIMITS.keyChars} characters`);
export const metadataValue = chars(METADATA_LIMITS.valueChars);

/** A string→string map of at most 16 keys; `reserved` keys are refused. */
export function metadataMap(reserved: readonly string[] = []) {
  return z
    .record(metadataKey, metadataValue)
    .refine((m) => Object.keys(m).length <= METADATA_LIMITS.keys, `must have at most ${METADATA_LIMITS.keys} keys`)
    .superRefine((m, ctx) => {
      for (const key of reserved) {
        if (Object.hasOwn(m, key)) ctx.addIssue({ code: 'custom', path: [key], message: `the key '${key}' is reserved; use the top-level field` });
      }
    });
}

/** Pagination limits shared by every list route. */
export const PAGE_LIMITS = { default: 20, max: 100 } as const;
export const pageLimit = z.coerce
  .number({ error: 'must be an integer' })
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(PAGE_LIMITS.max, `must be at most ${PAGE_LIMITS.max}`)
  .default(PAGE_LIMITS.default);

/** Query-string booleans: `true`/`false`/`1`/`0`. */
export const queryBoolean = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

/**
 * An optional request field that also takes JSON `null` for "not set", as OpenAI's API does
 * (its SDK types most request fields `T | null`): null reads exactly like an omitted field.
 */
export const optionalOrNull = <T extends z.ZodType>(schema: T) => schema.nullish().transform((value): z.output<T> | undefined => value ?? undefined);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding (a size limit, where there is one, is checked apart: it decides 400 vs 413). */
export const Base64Text = z
  .string()
  .min(1, 'must not be empty')
  .refine((value) => value.length % 4 === 0 && BASE64.test(value), 'must be standard base64 (A-Z a-z 0-9 + /, padded with =)');

/**
 * A `data:<media type>;base64,<payload>` URL unpacked (the scheme and `;base64` in any case, as
 * RFC 2397 allows; the media type lower-cased), or undefined for any other URL.
 */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/is.exec(url);
  return match ? { mediaType: match[1]!.toLowerCase(), data: match[2]! } : undefined;
}

/** A text file's media type (`text/plain`, `text/markdown`, ...): such a file is read as text. */
export const isTextMediaType = (mediaType: string): boolean => mediaType.toLowerCase().startsWith('text/');

/** A data: URL's payload is base64 a provider can decode (bad bytes would fail there, in its own shape). */
export const hasBase64Payload = (url: string): boolean => {
  const parsed = parseDataUrl(url);
  return !parsed || Base64Text.safeParse(parsed.data).success;
};
export const BASE64_PAYLOAD_RULE = 'the data: URL must carry standard base64 (A-Z a-z 0-9 + /, padded with =), not nothing';

/** A media type without parameters: `application/pdf`, `text/markdown`. */
export const MediaType = z.string().regex(/^[A-Za-z0-9][\w.+-]*\/[A-Za-z0-9][\w.+-]*$/, 'must be a media type such as application/pdf');
