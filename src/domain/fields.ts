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

// RFC 2397: `data:<type>/<subtype>[;<attribute>=<value>]...;base64,<payload>`.
const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+)((?:;[^;,=]+=[^;,]*)*);base64,(.*)$/is;

/**
 * A `data:<media type>[;parameters];base64,<payload>` URL unpacked (the scheme and `;base64` in
 * any case, as RFC 2397 allows; the media type lower-cased, its `charset` parameter apart), or
 * undefined for any other URL.
 */
export function parseDataUrl(url: string): { mediaType: string; charset?: string; data: string } | undefined {
  const match = DATA_URL.exec(url);
  if (!match) return undefined;
  const charset = charsetOf(match[2]!);
  return { mediaType: match[1]!.trim().toLowerCase(), ...(charset ? { charset } : {}), data: match[3]! };
}

/** The `charset` parameter of a media type's parameters (`; charset=iso-8859-1`), unquoted. */
export function charsetOf(mediaTypeOrParameters: string): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";,\s]+)"?/i.exec(mediaTypeOrParameters);
  return match ? decodeURIComponentOr(match[1]!) : undefined;
}

/** A percent-encoded text decoded, or as it is when it is not well-formed percent-encoding. */
export const decodeURIComponentOr = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** A media type without its parameters, lower-cased: `Text/Plain; charset=utf-8` → `text/plain`. */
export const mediaTypeEssence = (mediaType: string): string => mediaType.split(';')[0]!.trim().toLowerCase();

/** A text file's media type (`text/plain`, `text/markdown`, ...): such a file is read as text. */
export const isTextMediaType = (mediaType: string): boolean => mediaType.toLowerCase().startsWith('text/');

/**
 * A text file's bytes (base64) read as text in its charset (UTF-8 when none is named; a byte
 * order mark dropped), or why they cannot be: bytes that are not text in that charset are
 * refused rather than read with U+FFFD in their place.
 */
export function readTextFile(base64: string, charset: string | undefined): { text: string } | { refused: string } {
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8', { fatal: true });
  } catch {
    return { refused: `the text file's charset ${JSON.stringify(charset)} is not one the gateway reads (use utf-8, utf-16le, iso-8859-1, windows-1252, shift_jis, ...)` };
  }
  try {
    const bytes = Buffer.from(base64, 'base64');
    return { text: decoder.encoding === 'windows-1252' ? decodeWindows1252(bytes) : decoder.decode(bytes) };
  } catch {
    return { refused: `the text file is not valid ${charset ?? 'UTF-8'} text${charset ? '' : ' (name its charset in the media type: text/plain; charset=iso-8859-1)'}` };
  }
}

/** Why a base64 file of this media type cannot be read as text, or undefined (not text, or readable). */
export function unreadableTextFile(mediaType: string, base64: string, charset: string | undefined): string | undefined {
  if (!isTextMediaType(mediaType)) return undefined;
  const read = readTextFile(base64, charset);
  return 'refused' in read ? read.refused : undefined;
}

// Windows-1252's 0x80-0x9F (€ ‚ ƒ „ … † ‡ ˆ ‰ Š ‹ Œ Ž ‘ ’ “ ” • – — ˜ ™ š › œ ž Ÿ; the five it
// leaves undefined stay the C1 controls of the same number, as WHATWG decodes them).
const WINDOWS_1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

/**
 * Windows-1252, which WHATWG also reads for the labels iso-8859-1, latin1 and us-ascii (what
 * such files really hold). Decoded here: Node 20's TextDecoder reads it as Latin-1 (curly
 * quotes, dashes and € become C1 control characters; nodejs/node#56542).
 */
function decodeWindows1252(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('latin1').replace(/[\x80-\x9f]/g, (c) => String.fromCharCode(WINDOWS_1252_HIGH[c.charCodeAt(0) - 0x80]!));
}

/** A data: URL's payload is base64 a provider can decode (bad bytes would fail there, in its own shape). */
export const hasBase64Payload = (url: string): boolean => {
  const parsed = parseDataUrl(url);
  return !parsed || Base64Text.safeParse(parsed.data).success;
};
export const BASE64_PAYLOAD_RULE = 'the data: URL must carry standard base64 (A-Z a-z 0-9 + /, padded with =), not nothing';

/** A media type, parameters allowed: `application/pdf`, `text/plain; charset=iso-8859-1`. */
export const MediaType = z
  .string()
  .regex(/^[A-Za-z0-9][\w.+-]*\/[A-Za-z0-9][\w.+-]*(\s*;\s*[\w.+-]+=("[^"]*"|[\w.+-]+))*$/, 'must be a media type such as application/pdf or text/plain; charset=utf-8');
