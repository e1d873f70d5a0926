/**
 * JSON request bodies are parsed here, by the gateway, OAuth and the platform API alike, so that
 * every handler and every schema receives a value that Postgres, `JSON.stringify` and the
 * providers can all take:
 * - nesting is capped at MAX_JSON_DEPTH levels. `JSON.parse` accepts any depth, but a value
 *   nested thousands of levels deep overflows the stack of the first recursive consumer
 *   (`JSON.stringify` in a size check, Postgres' jsonb parser) and would surface as a 500;
 * - strings (keys too) must be well-formed UTF-16. A `\ud800` escape with no partner parses
 *   to a lone surrogate, which jsonb refuses and a text column silently stores as U+FFFD, so
 *   the value would neither be stored nor round-trip;
 * - at most MAX_JSON_CONTAINERS arrays and objects in all, MAX_JSON_MEMBERS object members and
 *   MAX_JSON_VALUES values, counted on the text before parsing: building millions of tiny
 *   containers (30 MB of nested `[]`), objects of millions of keys or arrays of millions of
 *   numbers takes `JSON.parse` (and every copy after it) seconds, during which the process
 *   answers nobody, where the same bytes of strings take milliseconds;
 * - no key is `__proto__`. JSON.parse keeps it as a plain key, but copying the object (as
 *   schema parsing does) sets a prototype instead, so the entry would silently vanish: a
 *   metadata filter `{"__proto__": [...]}` would filter nothing;
 * - every number is one a double carries: `1e400` parses to Infinity, which `JSON.stringify`
 *   writes as `null` (a tool schema's `maximum` would silently become null), and an integer
 *   written beyond ±2^53 that does not read back as written (`12345678901234567891` comes
 *   back as 12345678901234567000) would be another integer. Both are refused; integers that
 *   read back as written (`1e23`, `9223372036854776000`, which JSON.stringify writes) and
 *   decimals with more digits than a double holds (`0.10000000000000000555`, rounded as every
 *   JSON reader in JavaScript rounds them) are taken. Numbers of more than 15 digits are
 *   checked against their text, at most MAX_JSON_LONG_NUMBERS of them (each costs a little).
 */
export const MAX_JSON_DEPTH = 128;
export const MAX_JSON_CONTAINERS = 100_000;
export const MAX_JSON_MEMBERS = 100_000;
export const MAX_JSON_VALUES = 1_000_000;
/** Numbers of more than 15 digits a body may hold: each is checked against its text (above). */
export const MAX_JSON_LONG_NUMBERS = 10_000;

export class JsonTextError extends Error {
  readonly kind: 'encoding' | 'syntax' | 'depth' | 'surrogate' | 'key' | 'size' | 'number';
  /** Where in the body the problem is (`messages[0].content`), or undefined for the whole body. */
  readonly path: string | undefined;

  constructor(kind: JsonTextError['kind'], message: string, path?: string) {
    super(message);
    this.kind = kind;
    this.path = path;
  }
}

/**
 * An item of a batch (`itemsOf`) that broke one of the rules above: it is refused on its own,
 * as a batch's invalid items are, instead of failing the whole body.
 */
export class RefusedJsonItem {
  constructor(
    readonly message: string,
    readonly id: string | undefined,
  ) {}
}

// Fatal: bytes that are not UTF-8 are refused, not replaced with U+FFFD (two ids differing only
// in such bytes would become one). A leading BOM is kept, so it fails to parse, as before.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A request body's bytes as text: JSON bodies are UTF-8 (RFC 8259). */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new JsonTextError('encoding', 'request body is not valid UTF-8');
  }
}

/**
 * Parses a JSON text or throws JsonTextError with a client-safe message. With `itemsOf`, each
 * item of that top-level array that breaks a rule becomes a RefusedJsonItem instead.
 */
export function parseJsonText(text: string, options: { itemsOf?: string } = {}): unknown {
  // A text this short cannot hold more containers, members or values than the limits: no scan on the hot path.
  const excess = text.length > 2 * Math.min(MAX_JSON_CONTAINERS, MAX_JSON_MEMBERS) ? structureExceeding(text) : undefined;
  if (excess === 'containers') throw new JsonTextError('size', `request body holds more than ${MAX_JSON_CONTAINERS} arrays and objects`);
  if (excess === 'members') throw new JsonTextError('size', `request body holds more than ${MAX_JSON_MEMBERS} object members (keys)`);
  if (excess === 'values') throw new JsonTextError('size', `request body holds more than ${MAX_JSON_VALUES} values`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new JsonTextError('syntax', 'request body is not valid JSON');
  }
  const items = options.itemsOf !== undefined ? itemsOf(value, options.itemsOf) : undefined;
  // Only a number of 16 digits or more can be an inexact integer: texts without such a digit
  // run (almost all) are not scanned for them. With `itemsOf`, each item is refused for its own
  // first one, the body for one outside them.
  const inexact = /\d{16}/.test(text) ? inexactIntegersByItem(text, options.itemsOf) : undefined;
  const check = (item: unknown, path: Array<string | number>, depth: number) => {
    checkValue(item, path, depth);
    const found = inexact?.get(itemKey(path));
    if (found) {
      const at = pathText(found.path);
      throw new JsonTextError('number', `${at ?? 'the request body'}: the integer ${found.token} is beyond what a JSON number carries exactly here (±9007199254740991); send it as a string`, at);
    }
  };
  if (!items) {
    check(value, [], 0);
    return value;
  }
  const body = value as Record<string, unknown>;
  body[options.itemsOf!] = [];
  check(body, [], 0);
  body[options.itemsOf!] = items.map((item, i) => {
    try {
      check(item, [options.itemsOf!, i], 2);
      return item;
    } catch (error) {
      if (!(error instanceof JsonTextError)) throw error;
      const id = (item as { id?: unknown } | null)?.id;
      return new RefusedJsonItem(error.message, typeof id === 'string' && id.isWellFormed() ? id : undefined);
    }
  });
  return body;
}

/** A batch item's key (`documents`, 3), or '' for the body outside the items. */
const itemKey = (path: Array<string | number>) => (path.length < 2 ? '' : `${path[0]}\u0000${path[1]}`);

/** The first inexact integer of the body outside the items, and of each item (`itemsOf`). */
function inexactIntegersByItem(text: string, itemsOfField: string | undefined): Map<string, InexactInteger> {
  const byItem = new Map<string, InexactInteger>();
  for (const found of inexactIntegers(text, itemsOfField === undefined)) {
    const key = found.path[0] === itemsOfField && typeof found.path[1] === 'number' ? itemKey(found.path) : '';
    if (!byItem.has(key)) byItem.set(key, found);
  }
  return byItem;
}

function itemsOf(value: unknown, field: string): unknown[] | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, field)) return undefined;
  const items = (value as Record<string, unknown>)[field];
  return Array.isArray(items) ? items : undefined;
}

/**
 * Counts `{` and `[` (containers) and `:` (object members) outside strings, stopping once one
 * count is past its limit (about 3 ms per MB).
 */
function structureExceeding(text: string): 'containers' | 'members' | 'values' | undefined {
  let containers = 0;
  let members = 0;
  let separators = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++containers > MAX_JSON_CONTAINERS) return 'containers';
    else if (c === 0x3a && ++members > MAX_JSON_MEMBERS) return 'members';
    // (Values: one more than the commas between them.)
    else if (c === 0x2c && ++separators >= MAX_JSON_VALUES) return 'values';
  }
  return undefined;
}

// The path is one array, pushed and popped, so a large body costs no allocation per value.
function checkValue(value: unknown, path: Array<string | number>, depth: number): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new JsonTextError('number', `${describe(path)} is a number too large to carry (beyond ±1.8e308)`, pathText(path));
    return;
  }
  if (typeof value === 'string') {
    if (!value.isWellFormed()) throw new JsonTextError('surrogate', `${describe(path)} contains an unpaired UTF-16 surrogate (a \\uD800-\\uDFFF escape without its partner)`, pathText(path));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_JSON_DEPTH) {
    // Named by where the deep nesting starts (its first levels: the whole path is 128 long).
    const where = path.length > 4 ? `${path.slice(0, 4).join('.')}…` : (pathText(path) ?? 'the body');
    throw new JsonTextError('depth', `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (under ${where})`, pathText(path));
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      checkValue(value[i], path, depth + 1);
      path.pop();
    }
    return;
  }
  for (const key in value) {
    if (!key.isWellFormed()) throw new JsonTextError('surrogate', `a key in ${describe(path)} contains an unpaired UTF-16 surrogate`, pathText(path));
    if (key === '__proto__') throw new JsonTextError('key', `${describe(path)} has a key named __proto__, which is not accepted`, pathText(path));
    path.push(key);
    checkValue((value as Record<string, unknown>)[key], path, depth + 1);
    path.pop();
  }
}

interface InexactInteger {
  path: Array<string | number>;
  /** As the text writes it. */
  token: string;
}

/**
 * The integers the text writes that a double does not hold, each with where it is: number
 * tokens whose value has no fraction and lies beyond ±2^53, and which do not read back as
 * written (`12345678901234567891` becomes 12345678901234567000; `1e23` and
 * `12345678901234567000` read back as themselves and are fine). One pass over the text that
 * follows the nesting, so paths are exact (a value lookup could name an equal number elsewhere).
 */
function inexactIntegers(text: string, firstOnly: boolean): InexactInteger[] {
  const found: InexactInteger[] = [];
  let longNumbers = 0;
  const path: Array<string | number> = [];
  const arrays: boolean[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (expectingKey) {
        path[path.length - 1] = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        expectingKey = false;
      }
    } else if (c === 0x7b || c === 0x5b) {
      arrays.push(c === 0x5b);
      path.push(c === 0x5b ? 0 : '');
      expectingKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      arrays.pop();
      path.pop();
      expectingKey = false;
    } else if (c === 0x2c) {
      if (arrays[arrays.length - 1]) (path[path.length - 1] as number)++;
      else expectingKey = true;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      while (i + 1 < text.length && isNumberCharacter(text.charCodeAt(i + 1))) i++;
      const token = text.slice(start, i + 1);
      if (significantDigits(token) <= 15) continue; // reads back as written (DBL_DIG)
      if (++longNumbers > MAX_JSON_LONG_NUMBERS) throw new JsonTextError('size', `request body holds more than ${MAX_JSON_LONG_NUMBERS} numbers of more than 15 digits`);
      if (isInexactInteger(token)) {
        found.push({ path: [...path], token });
        if (firstOnly) break;
      }
    }
  }
  return found;
}

// 0-9 - + . e E
const isNumberCharacter = (c: number) => (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;

const PLAIN_INTEGER = /^-?\d+$/;

/** The digits of a number token before its exponent (leading zeros included: an upper bound). */
function significantDigits(token: string): number {
  let digits = 0;
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c === 0x65 || c === 0x45) break;
    if (c >= 0x30 && c <= 0x39) digits++;
  }
  return digits;
}

function isInexactInteger(token: string): boolean {
  const value = Number(token);
  if (!Number.isInteger(value) || Number.isSafeInteger(value)) return false;
  const printed = String(value);
  if (printed === token) return false;
  // Both written out in digits (JSON has no leading zeros): different text, different integer.
  if (PLAIN_INTEGER.test(token) && PLAIN_INTEGER.test(printed)) return true;
  const written = integerDecimal(token);
  // (A token with a fraction is a decimal, rounded as decimals are.)
  return written !== undefined && written !== integerDecimal(printed);
}

/**
 * An integer's decimal in one form (`<sign><digits>e<exponent>`, no leading or trailing zero
 * digits) whatever way it is written (`1e23`, `100000000000000000000000`, `1.0e23`), or
 * undefined when the token writes a fraction.
 */
function integerDecimal(token: string): string | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!match) return undefined;
  const fraction = match[3] ?? '';
  const all = match[2]! + fraction;
  // Zeros trimmed by index, not by regex: /0+$/ backtracks quadratically on `10000…0001`.
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === 0x30) start++;
  let end = all.length;
  while (end > start && all.charCodeAt(end - 1) === 0x30) end--;
  if (start === end) return '0';
  const exponent = Number(match[4] ?? 0) - fraction.length + (all.length - end);
  return exponent < 0 ? undefined : `${match[1]}${all.slice(start, end)}e${exponent}`;
}

const startsWith = (path: Array<string | number>, prefix: Array<string | number>) => prefix.every((step, i) => path[i] === step);

/** A path as schema errors name fields: `events.0.content.0.text`. */
function pathText(path: Array<string | number>): string | undefined {
  return path.length === 0 ? undefined : path.join('.');
}

/**
 * Where the first text holding U+0000 is in a request's parsed inputs (its body, then its
 * query; a key or a string value), or undefined. Postgres refuses such text, so the 400 that
 * follows can name the field.
 */
export function nulField(inputs: unknown[]): string | undefined {
  for (const input of inputs) {
    const found = nulPath(input, []);
    if (found) return found;
  }
  return undefined;
}

function nulPath(value: unknown, path: Array<string | number>): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? (pathText(path) ?? 'body') : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((item, i) => [i, item]) : Object.entries(value);
  for (const [key, item] of entries) {
    if (typeof key === 'string' && key.includes('\u0000')) return pathText([...path, key]);
    path.push(key);
    const found = nulPath(item, path);
    path.pop();
    if (found) return found;
  }
  return undefined;
}

const describe = (path: Array<string | number>) => (path.length === 0 ? 'the request body' : pathText(path)!);
