import { JsonTextError, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, MAX_JSON_LONG_NUMBERS, MAX_JSON_MEMBERS, MAX_JSON_VALUES, nulField, parseJsonText, RefusedJsonItem } from '../../../src/json-text';

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const failure = (text: string): JsonTextError => {
  try {
    parseJsonText(text);
  } catch (error) {
    if (error instanceof JsonTextError) return error;
    throw error;
  }
  throw new Error(`parsed: ${text.slice(0, 40)}`);
};

describe('parseJsonText', () => {
  test('parses ordinary JSON, surrogate pairs included', () => {
    expect(parseJsonText('{"a":[1,{"b":"x\\ud83d\\ude00"}],"c":null}')).toEqual({ a: [1, { b: 'x😀' }], c: null });
  });

  test('syntax errors', () => {
    expect(failure('{"a":').kind).toBe('syntax');
  });

  test(`nesting: ${MAX_JSON_DEPTH} levels parse, one more is refused where it starts`, () => {
    expect(parseJsonText(nested(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    const error = failure(`{"settings":{"k":${nested(MAX_JSON_DEPTH - 1)}}}`);
    expect(error.kind).toBe('depth');
    expect(error.path).toBe(`settings.k${'.0'.repeat(MAX_JSON_DEPTH - 2)}`);
    expect(error.message).toBe(`request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (under settings.k.0.0…)`);
    // Far past the limit: refused the same way, no stack overflow.
    expect(failure(nested(100_000)).kind).toBe('depth');
  });

  test.each([
    ['a lone high surrogate', '{"messages":[{"content":"x\\ud800"}]}', 'messages.0.content'],
    ['a lone low surrogate', '["\\udc00"]', '0'],
    ['a reversed pair', '{"a":"\\ude00\\ud83d"}', 'a'],
  ])('%s is refused, naming where', (_label, text, path) => {
    const error = failure(text);
    expect(error.kind).toBe('surrogate');
    expect(error.path).toBe(path);
    expect(error.message).toContain(path);
  });

  test(`at most ${MAX_JSON_CONTAINERS} arrays and objects, counted before parsing; brackets inside strings do not count`, () => {
    const many = (n: number) => `[${Array(n).fill('[]').join(',')}]`;
    expect(parseJsonText(many(MAX_JSON_CONTAINERS - 1))).toHaveLength(MAX_JSON_CONTAINERS - 1);
    expect(failure(many(MAX_JSON_CONTAINERS)).kind).toBe('size');
    const bracketsInText = JSON.stringify({ code: '[{"a":"\\"}]'.repeat(50_000) });
    expect(parseJsonText(bracketsInText)).toHaveProperty('code');
  });

  test(`at most ${MAX_JSON_MEMBERS} object members, counted before parsing; colons inside strings do not count`, () => {
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
    expect(Object.keys(parseJsonText(keys(MAX_JSON_MEMBERS)) as object)).toHaveLength(MAX_JSON_MEMBERS);
    const error = failure(keys(MAX_JSON_MEMBERS + 1));
    expect([error.kind, error.message]).toEqual(['size', `request body holds more than ${MAX_JSON_MEMBERS} object members (keys)`]);
    expect(parseJsonText(JSON.stringify({ text: 'a:b,'.repeat(100_000) }))).toHaveProperty('text');
  });

  test('a __proto__ key is refused wherever it is', () => {
    const error = failure('{"filters":{"metadata":{"__proto__":["public"]}}}');
    expect(error.kind).toBe('key');
    expect(error.path).toBe('filters.metadata');
    expect(failure('{"__proto__":{}}').path).toBeUndefined();
    expect(parseJsonText('{"constructor":1,"prototype":2}')).toEqual({ constructor: 1, prototype: 2 });
  });

  test('a key with a lone surrogate is refused', () => {
    const error = failure('{"meta":{"k\\ud800":1}}');
    expect(error.kind).toBe('surrogate');
    expect(error.path).toBe('meta');
  });
  test.each([
    ['1e400', '{"tools":[{"maximum":1e400}]}', 'tools.0.maximum'],
    ['-1e400', '{"a":{"b":[-1e400]}}', 'a.b.0'],
  ])('a number a double cannot carry (%s, Infinity) is refused, naming where', (_label, text, path) => {
    const error = failure(text);
    expect(error.kind).toBe('number');
    expect(error.path).toBe(path);
  });

  test.each([
    ['12345678901234567891', 'n'],
    ['9007199254740993', 'n'],
    ['-9007199254740993', 'n'],
    ['1.2345678901234567891e19', 'n'],
  ])('an integer written beyond ±2^53 that a double does not hold exactly (%s) is refused', (literal, path) => {
    const error = failure(`{"s":"${literal}","n":${literal}}`);
    expect(error.kind).toBe('number');
    expect(error.path).toBe(path);
    expect(error.message).toContain(`the integer ${literal} `);
  });

  test('an integer that reads back as written is taken, however a double stores it (what JSON.stringify writes comes back in)', () => {
    expect(parseJsonText('{"a":1e23,"b":9223372036854776000,"c":12345678901234567000,"d":1.7976931348623157e308}')).toEqual({ a: 1e23, b: 2 ** 63, c: 12345678901234567000, d: Number.MAX_VALUE });
    const stored = { order_id: 12345678901234567891.5 };
    expect(parseJsonText(JSON.stringify(stored))).toEqual(stored);
  });

  test('long runs of zeros inside a number are read in one pass (a trailing-zero regex backtracked on them)', () => {
    const zeros = 100_000;
    expect(parseJsonText(`{"x":1${'0'.repeat(zeros)}1e-${zeros - 17}}`)).toEqual({ x: Number(`1${'0'.repeat(zeros)}1e-${zeros - 17}`) });
    expect(failure(`{"x":9${'0'.repeat(20)}3e0}`).path).toBe('x');
  });

  test(`at most ${MAX_JSON_LONG_NUMBERS} numbers of more than 15 digits, and ${MAX_JSON_VALUES} values, in a body`, () => {
    const long = (count: number) => `[${Array.from({ length: count }, (_, i) => String(18014398509486080 + i * 16)).join(',')}]`;
    expect(parseJsonText(long(MAX_JSON_LONG_NUMBERS))).toHaveLength(MAX_JSON_LONG_NUMBERS);
    expect(failure(long(MAX_JSON_LONG_NUMBERS + 1))).toMatchObject({ kind: 'size', message: `request body holds more than ${MAX_JSON_LONG_NUMBERS} numbers of more than 15 digits` });
    expect(parseJsonText(`[${Array(MAX_JSON_VALUES).fill('1').join(',')}]`)).toHaveLength(MAX_JSON_VALUES);
    expect(failure(`[${Array(MAX_JSON_VALUES + 1).fill('1').join(',')}]`)).toMatchObject({ kind: 'size', message: `request body holds more than ${MAX_JSON_VALUES} values` });
  });

  test('the refusal names where the inexact integer is, not an equal number elsewhere', () => {
    expect(failure('{"metadata":{"a":9007199254740992,"b":9007199254740993}}').path).toBe('metadata.b');
    expect(failure('{"list":[9007199254740992,{},[],"9007199254740993",9007199254740993]}').path).toBe('list.4');
    expect(failure('{"k.x":{"e\\"sc":[{"z":-9007199254740993}]}}').path).toBe('k.x.e"sc.0.z');
  });

  test('integers a double holds exactly, decimals (rounded) and -0 parse; digits inside strings are not numbers', () => {
    expect(parseJsonText('{"a":9007199254740992,"b":1e20,"c":100000000000000000000,"d":0.10000000000000000555,"e":-0,"f":"12345678901234567891"}')).toEqual({
      a: 9007199254740992,
      b: 1e20,
      c: 1e20,
      d: 0.1,
      e: -0,
      f: '12345678901234567891',
    });
  });

  test('in a batch, the item holding an inexact integer is refused on its own', () => {
    const body = parseJsonText('{"docs":[{"id":"a","n":1},{"id":"b","n":12345678901234567891}]}', { itemsOf: 'docs' }) as { docs: unknown[] };
    expect(body.docs[0]).toEqual({ id: 'a', n: 1 });
    expect(body.docs[1]).toBeInstanceOf(RefusedJsonItem);
    expect((body.docs[1] as RefusedJsonItem).id).toBe('b');
  });
});

describe('nulField', () => {
  test('names the first key or string holding U+0000, the body before the query', () => {
    expect(nulField([{ name: 'ok', metadata: { k: 'a\u0000' } }])).toBe('metadata.k');
    expect(nulField([{ events: [{ content: [{ text: 'fine' }, { text: '\u0000' }] }] }])).toBe('events.0.content.1.text');
    expect(nulField([{ metadata: { 'k\u0000': 'v' } }])).toBe('metadata.k\u0000');
    expect(nulField(['\u0000'])).toBe('body');
    expect(nulField([{ name: 'clean' }, { agent_id: '\u0000' }])).toBe('agent_id');
    expect(nulField([undefined, { a: 1, b: null, c: ['x'] }])).toBeUndefined();
  });
});
