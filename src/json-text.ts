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
 * - at most MAX_JSON_CONTAINERS arrays and objects in all, and MAX_JSON_MEMBERS object members,
 *   counted on the text before parsing: building millions of tiny containers (30 MB of nested
 *   `[]`), or objects of millions of keys, takes `JSON.parse` (and every copy after it) seconds,
 *   during which the process answers nobody, where the same bytes of strings take milliseconds;
 * - no key is `__proto__`. JSON.parse keeps it as a plain key, but copying the object (as
 *   schema parsing does) sets a prototype instead, so the entry would silently vanish: a
 *   metadata filter `{"__proto__": [...]}` would filter nothing;
 * - every number is one a double carries: `1e400` parses to Infinity, which `JSON.stringify`
 *   writes as `null` (a tool schema's `maximum` would silently become null), and an integer
 *   written beyond ±2^53 that a double cannot hold exactly (`12345678901234567891`) would come
 *   back as another integer. Both are refused; decimals with more digits than a double holds
 *   (`0.10000000000000000555`) are rounded as every JSON reader in JavaScript rounds them.
 */
export const MAX_JSON_DEPTH = 128;
export const MAX_JSON_CONTAINERS = 100_000;
export const MAX_JSON_MEMBERS = 100_000;

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
  // A text this short cannot hold more containers or members than the limits: no scan on the hot path.
  const excess = text.length > 2 * Math.min(MAX_JSON_CONTAINERS, MAX_JSON_MEMBERS) ? structureExceeding(text) : undefined;
  if (excess === 'containers') throw new JsonTextError('size', `request body holds more than ${MAX_JSON_CONTAINERS} arrays and objects`);
  if (excess === 'members') throw new JsonTextError('size', `request body holds more than ${MAX_JSON_MEMBERS} object members (keys)`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new JsonTextError('syntax', 'request body is not valid JSON');
  }
  const items = options.itemsOf !== undefined ? itemsOf(value, options.itemsOf) : undefined;
  // Integers beyond ±2^53 are rare: the text is scanned for inexact ones only when one is seen.
  const seen = { unsafeInteger: false };
  let inexact: Map<number, string> | undefined;
  const check = (item: unknown, path: Array<string | number>, depth: number) => {
    checkValue(item, path, depth, seen);
    if (!seen.unsafeInteger) return;
    inexact ??= inexactIntegers(text);
    refuseInexactIntegers(item, path, inexact);
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

function itemsOf(value: unknown, field: string): unknown[] | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, field)) return undefined;
  const items = (value as Record<string, unknown>)[field];
  return Array.isArray(items) ? items : undefined;
}

/**
 * Counts `{` and `[` (containers) and `:` (object members) outside strings, stopping once one
 * count is past its limit (about 3 ms per MB).
 */
function structureExceeding(text: string): 'containers' | 'members' | undefined {
  let containers = 0;
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++containers > MAX_JSON_CONTAINERS) return 'containers';
    else if (c === 0x3a && ++members > MAX_JSON_MEMBERS) return 'members';
  }
  return undefined;
}

// The path is one array, pushed and popped, so a large body costs no allocation per value.
function checkValue(value: unknown, path: Array<string | number>, depth: number, seen: { unsafeInteger: boolean }): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new JsonTextError('number', `${describe(path)} is a number too large to carry (beyond ±1.8e308)`, pathText(path));
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) seen.unsafeInteger = true;
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
      checkValue(value[i], path, depth + 1, seen);
      path.pop();
    }
    return;
  }
  for (const key in value) {
    if (!key.isWellFormed()) throw new JsonTextError('surrogate', `a key in ${describe(path)} contains an unpaired UTF-16 surrogate`, pathText(path));
    if (key === '__proto__') throw new JsonTextError('key', `${describe(path)} has a key named __proto__, which is not accepted`, pathText(path));
    path.push(key);
    checkValue((value as Record<string, unknown>)[key], path, depth + 1, seen);
    path.pop();
  }
}

/**
 * The integers the text writes that a double does not hold exactly, by the value JSON.parse
 * made of them (`12345678901234567891` → 12345678901234567000): number tokens outside strings
 * whose value has no fraction and lies beyond ±2^53.
 */
function inexactIntegers(text: string): Map<number, string> {
  const found = new Map<number, string>();
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      while (i + 1 < text.length && /[-+.eE0-9]/.test(text[i + 1]!)) i++;
      const token = text.slice(start, i + 1);
      const value = Number(token);
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        const exact = integerWritten(token);
        if (exact !== undefined && exact !== BigInt(value)) found.set(value, token);
      }
    }
  }
  return found;
}

/** The integer a JSON number token writes exactly, or undefined when it writes a fraction. */
function integerWritten(token: string): bigint | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!match) return undefined;
  const fraction = match[3] ?? '';
  let digits = match[2]! + fraction;
  let exponent = Number(match[4] ?? 0) - fraction.length;
  while (exponent < 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    exponent++;
  }
  // A fraction is rounded as decimals are; a finite double never needs 10^400.
  if (exponent < 0 || exponent > 400) return undefined;
  return BigInt(match[1]! + digits) * 10n ** BigInt(exponent);
}

/** Throws for the first number under `value` that stands for an inexact integer of the text. */
function refuseInexactIntegers(value: unknown, path: Array<string | number>, inexact: Map<number, string>): void {
  if (typeof value === 'number') {
    const written = inexact.get(value);
    if (written !== undefined) {
      throw new JsonTextError('number', `${describe(path)}: the integer ${written} is beyond what a JSON number carries exactly here (±9007199254740991); send it as a string`, pathText(path));
    }
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((item, i) => [i, item]) : Object.entries(value);
  for (const [key, item] of entries) {
    path.push(key);
    refuseInexactIntegers(item, path, inexact);
    path.pop();
  }
}

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
