import { AggregationSchema, CollectionCreateSchema, DocumentInputSchema, SearchRequestSchema } from '../../../src/domain/kb';
import { buildAggregations, presentAggregations } from '../../../src/search/aggregations';

describe('schemas', () => {
  test('collection name is trimmed; 255 code points is the limit', () => {
    expect(CollectionCreateSchema.parse({ name: '  a  ' }).name).toBe('a');
    expect(CollectionCreateSchema.safeParse({ name: '😀'.repeat(255) }).success).toBe(true);
    expect(CollectionCreateSchema.safeParse({ name: '😀'.repeat(256) }).success).toBe(false);
    expect(CollectionCreateSchema.safeParse({ name: 'a\u0085b' }).success).toBe(false);
  });

  test('document language is normalised; metadata values are strings or string arrays', () => {
    expect(DocumentInputSchema.parse({ content: 'c', language: 'FR' }).language).toBe('fr');
    expect(DocumentInputSchema.safeParse({ content: 'c', metadata: { a: ['x', 'y'], b: 'z' } }).success).toBe(true);
    expect(DocumentInputSchema.safeParse({ content: 'c', metadata: { a: null } }).success).toBe(false);
    for (const uri of ['javascript:alert(1)', 'data:text/html,x', 'ftp://example.com/a', 'file:///etc/passwd']) {
      expect(DocumentInputSchema.safeParse({ content: 'c', uri }).error?.issues[0]?.message).toBe('must be an absolute http(s) URL');
    }
    expect(DocumentInputSchema.safeParse({ content: 'c', uri: 'HTTPS://example.com/a' }).success).toBe(true);
    const messages = (metadata: unknown) => DocumentInputSchema.safeParse({ content: 'c', metadata }).error?.issues.map((issue) => issue.message);
    expect(messages({ a: Array(100).fill('x'), b: 'y'.repeat(1024) })).toBeUndefined();
    expect(messages({ a: Array(101).fill('x') })).toEqual(['metadata arrays hold at most 100 strings']);
    expect(messages({ a: 'y'.repeat(1025) })).toEqual(['metadata strings are at most 1024 characters']);
    expect(messages({ a: ['x', 'y'.repeat(1025)] })).toEqual(['metadata strings are at most 1024 characters']);
    expect(messages({ a: 1 })).toEqual(['metadata values must be strings or arrays of strings']);
    expect(DocumentInputSchema.safeParse({ content: 'c', created_at: '2024-01-01T00:00:00.123456+05:30' }).success).toBe(true);
  });

  test('search defaults: top_n 10, blank query is no query; terms size only on terms', () => {
    expect(SearchRequestSchema.parse({})).toEqual({ top_n: 10 });
    expect(SearchRequestSchema.parse({ query: '  ' }).query).toBeUndefined();
    expect(SearchRequestSchema.parse({ query: ' hi ' }).query).toBe('hi');
    expect(AggregationSchema.safeParse({ type: 'terms', field: 'metadata.tags', size: 5 }).success).toBe(true);
    expect(AggregationSchema.safeParse({ type: 'terms', field: 'metadata.' }).success).toBe(false);
    expect(AggregationSchema.safeParse({ type: 'date_histogram', field: 'created_at', interval: '12h' }).success).toBe(true);
    expect(AggregationSchema.safeParse({ type: 'date_histogram', field: 'created_at', interval: '0d' }).success).toBe(false);
  });

  test("aggregations: the spec's array of {name, ...} and an object keyed by name parse to the same map", () => {
    const list = SearchRequestSchema.parse({ aggregations: [{ name: 't', type: 'terms', field: 'type', size: 3 }, { name: 'm', type: 'min', field: 'created_at' }] });
    const map = SearchRequestSchema.parse({ aggregations: { t: { type: 'terms', field: 'type', size: 3 }, m: { type: 'min', field: 'created_at' } } });
    expect(list.aggregations).toEqual({ t: { type: 'terms', field: 'type', size: 3 }, m: { type: 'min', field: 'created_at' } });
    expect(map.aggregations).toEqual(list.aggregations);
    const duplicate = SearchRequestSchema.safeParse({ aggregations: [{ name: 't', type: 'terms', field: 'type' }, { name: 't', type: 'min', field: 'created_at' }] });
    expect(duplicate.success ? [] : duplicate.error.issues.map((i) => i.path.join('.'))).toEqual(['aggregations.1.name']);
    const bad = SearchRequestSchema.safeParse({ aggregations: [{ name: 'a', type: 'terms', field: 'type', interval: 'day' }] });
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join('.'))).toEqual(['aggregations.0.interval']);
    const badMap = SearchRequestSchema.safeParse({ aggregations: { a: { type: 'terms', field: 'type', interval: 'day' } } });
    expect(badMap.success ? [] : badMap.error.issues.map((i) => i.path.join('.'))).toEqual(['aggregations.a.interval']);
    expect(SearchRequestSchema.safeParse({ aggregations: [{ type: 'terms', field: 'type' }] }).success).toBe(false); // a name is required
    expect(SearchRequestSchema.safeParse({ aggregations: 'terms' }).success).toBe(false);
  });
});

describe('metadata filter values', () => {
  test('an empty metadata value can be looked for (documents may store one); type, uri and language cannot be empty', () => {
    expect(SearchRequestSchema.parse({ filters: { metadata: { k: '' } } }).filters).toEqual({ metadata: { k: [''] } });
    expect(SearchRequestSchema.safeParse({ filters: { type: '' } }).success).toBe(false);
    expect(SearchRequestSchema.safeParse({ filters: { metadata: { k: [] } } }).success).toBe(false);
  });
});

describe('aggregations', () => {
  test('terms defaults to size 10; calendar vs fixed intervals; dates formatted', () => {
    expect(
      buildAggregations({
        t: { type: 'terms', field: 'type' },
        m: { type: 'date_histogram', field: 'created_at', interval: 'month' },
        f: { type: 'date_histogram', field: 'created_at', interval: '90m' },
        x: { type: 'max', field: 'modified_at' },
      }),
    ).toEqual({
      t: { terms: { field: 'type', size: 10 } },
      m: { date_histogram: { field: 'created_at', format: 'strict_date_time', calendar_interval: 'month' } },
      f: { date_histogram: { field: 'created_at', format: 'strict_date_time', fixed_interval: '90m' } },
      x: { max: { field: 'modified_at', format: 'strict_date_time' } },
    });
  });

  test('presents Elasticsearch results: other_doc_count, RFC 3339 keys, null min/max', () => {
    const specs = {
      t: { type: 'terms' as const, field: 'type' },
      h: { type: 'date_histogram' as const, field: 'created_at', interval: 'day' },
      n: { type: 'min' as const, field: 'created_at' },
      v: { type: 'max' as const, field: 'created_at' },
    };
    const raw = {
      t: { buckets: [{ key: 'post', doc_count: 3 }], sum_other_doc_count: 4 },
      h: { buckets: [{ key: 1704067200000, key_as_string: '2024-01-01T00:00:00.000Z', doc_count: 1 }] },
      n: { value: null },
      v: { value: 1704067200000, value_as_string: '2024-01-01T00:00:00.000Z' },
    };
    expect(presentAggregations(specs, raw as never)).toEqual({
      t: { buckets: [{ key: 'post', doc_count: 3 }], other_doc_count: 4 },
      h: { buckets: [{ key: '2024-01-01T00:00:00.000Z', doc_count: 1 }] },
      n: { value: null },
      v: { value: '2024-01-01T00:00:00.000Z' },
    });
  });
});
