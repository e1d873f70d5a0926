import { asArray, asRecord } from './protocol';

/**
 * A deterministic JSON value that conforms to a JSON Schema (the subset structured output
 * uses: object, array, string with enum, number/integer with bounds, boolean, null,
 * anyOf/oneOf, const), shaped by the user's text so that answers look plausible:
 *
 * - an array whose items carry a string `enum` (directly or in one property) gets one item
 *   per enum value that occurs in the text, in enum order (case-insensitive, whole words);
 * - other arrays get up to 3 items (within minItems/maxItems);
 * - free strings are the text's keywords (words of 4+ letters, first occurrence order),
 *   the i-th array item taking the i-th keyword;
 * - numbers are 0.9, 0.7, 0.5, 0.3, 0.1 for items 0, 1, 2, ... clamped to their bounds.
 */
type Schema = Record<string, unknown>;

const STOPWORDS = new Set(['this', 'that', 'with', 'from', 'have', 'into', 'about', 'their', 'there', 'which', 'what', 'when', 'where', 'your', 'will', 'would', 'should', 'could', 'been', 'were', 'they', 'them', 'then', 'than', 'also', 'some', 'more', 'most', 'very', 'just', 'only', 'over', 'such', 'each', 'other']);

export function keywords(text: string): string[] {
  const seen = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (word.length >= 4 && !/^\d+$/.test(word) && !STOPWORDS.has(word)) seen.add(word);
  }
  return [...seen];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const mentions = (text: string, value: string) => new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(value.toLowerCase())}($|[^\\p{L}\\p{N}])`, 'u').test(text.toLowerCase());

interface Filling {
  text: string;
  words: string[];
}

export function jsonAnswer(schema: Schema, text: string): unknown {
  return fill(schema, { text, words: keywords(text) }, 0, undefined);
}

/** The enum of an array item: its own, or that of its first enum property. */
function itemEnum(items: Schema): { property?: string; values: string[] } | undefined {
  const own = asArray(items.enum).filter((v): v is string => typeof v === 'string');
  if (own.length > 0) return { values: own };
  for (const [property, sub] of Object.entries(asRecord(items.properties))) {
    const values = asArray(asRecord(sub).enum).filter((v): v is string => typeof v === 'string');
    if (values.length > 0) return { property, values };
  }
  return undefined;
}

function fill(schema: Schema, filling: Filling, index: number, forced: { property?: string; value: string } | undefined): unknown {
  if ('const' in schema) return schema.const;
  const options = asArray(schema.anyOf ?? schema.oneOf);
  if (options.length > 0) return fill(asRecord(options[0]), filling, index, forced);
  const declared = Array.isArray(schema.type) ? schema.type.find((t) => String(t).toLowerCase() !== 'null') : schema.type;
  // Google's OpenAPI-style schemas spell types in upper case.
  const type = typeof declared === 'string' ? declared.toLowerCase() : undefined;
  switch (type ?? (schema.properties ? 'object' : 'string')) {
    case 'object': {
      const result: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(asRecord(schema.properties))) {
        result[name] = forced?.property === name ? forced.value : fill(asRecord(sub), filling, index, undefined);
      }
      return result;
    }
    case 'array': {
      const items = asRecord(schema.items);
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const max = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity;
      const enumerated = itemEnum(items);
      if (enumerated) {
        let chosen = enumerated.values.filter((value) => mentions(filling.text, value));
        if (chosen.length < min) chosen = [...chosen, ...enumerated.values.filter((v) => !chosen.includes(v))].slice(0, min);
        return chosen.slice(0, max).map((value, i) => (enumerated.property ? fill(items, filling, i, { property: enumerated.property, value }) : value));
      }
      const count = Math.max(min, Math.min(max, 3, Math.max(1, filling.words.length)));
      return Array.from({ length: count }, (_, i) => fill(items, filling, i, undefined));
    }
    case 'string': {
      const values = asArray(schema.enum).filter((v): v is string => typeof v === 'string');
      if (values.length > 0) return forced?.value ?? values.find((value) => mentions(filling.text, value)) ?? values[0];
      return filling.words[index] ?? filling.words[0] ?? `item ${index + 1}`;
    }
    case 'number':
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
      const max = typeof schema.maximum === 'number' ? schema.maximum : Infinity;
      const value = Math.round((0.9 - 0.2 * Math.min(index, 4)) * 10) / 10;
      const clamped = Math.min(max, Math.max(min, type === 'integer' ? Math.round(value) : value));
      return Number.isFinite(clamped) ? clamped : 0;
    }
    case 'boolean':
      return true;
    default:
      return null;
  }
}
