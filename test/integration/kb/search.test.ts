import { randomUUID } from 'node:crypto';
import type { Tenant } from '../../support/factories';
import { startApi, type TestApi } from '../../support/harness';
import { ensureLocalModel, ids, tenantWithClient, type KbClient } from './kb-client';

let api: TestApi;
let tenant: Tenant;
let kb: KbClient;
let collection: string;

// A fixed corpus: every filter, sort and aggregation below is checked against it.
const CORPUS = [
  { id: 'd1', title: 'Alpha release notes', content: 'The alpha release adds search.', type: 'post', uri: 'https://ex.com/alpha', language: 'en', created_at: '2024-01-10T00:00:00Z', modified_at: '2024-02-01T00:00:00Z', metadata: { category: 'news', tags: ['a', 'b'] } },
  { id: 'd2', title: 'Beta release notes', content: 'The beta release fixes bugs in search.', type: 'post', uri: 'https://ex.com/beta', language: 'en', created_at: '2024-01-20T00:00:00Z', modified_at: '2024-03-05T00:00:00Z', metadata: { category: 'news', tags: ['b'] } },
  { id: 'd3', title: 'Handbuch', content: 'Die Installation wird hier beschrieben.', type: 'page', uri: 'https://ex.com/de/handbuch', language: 'de', created_at: '2024-02-15T00:00:00Z', modified_at: '2024-02-20T00:00:00Z', metadata: { category: 'docs' } },
  { id: 'd4', title: 'Installation guide', content: 'How to install the product on a server.', type: 'page', uri: 'https://ex.com/install', language: 'en', created_at: '2024-03-01T00:00:00Z', metadata: { category: 'docs', tags: ['c'] } },
  { id: 'd5', title: 'Boutique', content: 'Acheter le produit en ligne.', type: 'product', uri: 'https://ex.com/fr/boutique', language: 'fr', created_at: '2024-03-15T00:00:00Z', metadata: { category: 'shop' } },
  { id: 'd6', title: 'Untitled note', content: 'A note without dates or metadata.', type: 'post', uri: 'https://ex.com/note', language: 'en' },
];

beforeAll(async () => {
  await ensureLocalModel();
  api = await startApi();
  ({ tenant, kb } = await tenantWithClient(api));
  collection = await kb.newCollection('corpus');
  await kb.index(collection, CORPUS);
});
afterAll(async () => {
  await api.close();
});

const browse = async (body: object) => ids(await kb.searchOk(collection, { top_n: 50, ...body }));
const sorted = (list: string[]) => [...list].sort();

describe('filters', () => {
  test('type, uri and language: exact, single value or array; language case-insensitive', async () => {
    expect(sorted(await browse({ filters: { type: 'page' } }))).toEqual(['d3', 'd4']);
    expect(sorted(await browse({ filters: { type: ['page', 'product'] } }))).toEqual(['d3', 'd4', 'd5']);
    expect(await browse({ filters: { type: 'Page' } })).toEqual([]);
    expect(await browse({ filters: { uri: 'https://ex.com/beta' } })).toEqual(['d2']);
    expect(await browse({ filters: { uri: 'https://ex.com/bet' } })).toEqual([]);
    expect(sorted(await browse({ filters: { language: ['DE', 'fr'] } }))).toEqual(['d3', 'd5']);
  });

  test('metadata: field to accepted values; several fields must all match; arrays match any element', async () => {
    expect(sorted(await browse({ filters: { metadata: { category: 'news' } } }))).toEqual(['d1', 'd2']);
    expect(sorted(await browse({ filters: { metadata: { tags: ['b', 'c'] } } }))).toEqual(['d1', 'd2', 'd4']);
    expect(await browse({ filters: { metadata: { category: 'news', tags: 'a' } } })).toEqual(['d1']);
    expect(await browse({ filters: { metadata: { unknown_field: 'x' } } })).toEqual([]);
  });

  test('a metadata filter names at most 64 fields (as many as a document holds): 400 past that, not an Elasticsearch failure', async () => {
    const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, 'x']));
    expect((await kb.search(collection, { filters: { metadata: fields(64) } })).status).toBe(200);
    const refused = await kb.search(collection, { filters: { metadata: fields(20_000) } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/filters\.metadata: at most 64 metadata keys/);
    expect((await kb.search(collection, { query: 'x', filters: { metadata: fields(65) } })).status).toBe(400);
    // Values per field: at most 100, and the answer says so.
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
    expect((await kb.search(collection, { filters: { metadata: { f: values(100) } } })).status).toBe(200);
    const many = await kb.search(collection, { filters: { metadata: { f: values(101) }, type: values(101) } });
    expect([many.status, many.body.error.message]).toEqual([400, expect.stringMatching(/at most 100 values/)]);
  });

  test('created_at and modified_at: gte/lte inclusive; documents without the date never match', async () => {
    expect(sorted(await browse({ filters: { created_at: { gte: '2024-01-20T00:00:00Z', lte: '2024-03-01T00:00:00Z' } } }))).toEqual(['d2', 'd3', 'd4']);
    expect(sorted(await browse({ filters: { created_at: { gte: '2024-03-01T00:00:00Z' } } }))).toEqual(['d4', 'd5']);
    // Offsets are honoured: 01:00+01:00 is midnight UTC.
    expect(sorted(await browse({ filters: { created_at: { lte: '2024-01-20T01:00:00+01:00' } } }))).toEqual(['d1', 'd2']);
    expect(sorted(await browse({ filters: { modified_at: { lte: '2024-02-20T00:00:00Z' } } }))).toEqual(['d1', 'd3']);
  });

  test('any valid RFC 3339 bound works, also offsets past ±18:00 and more than nine fraction digits', async () => {
    // 2024-01-20T19:00:00+19:00 is midnight UTC on the 20th; Elasticsearch alone refuses the offset.
    expect(sorted(await browse({ filters: { created_at: { lte: '2024-01-20T19:00:00+19:00' } } }))).toEqual(['d1', 'd2']);
    expect(sorted(await browse({ filters: { created_at: { gte: '2024-03-14T00:30:00-23:30' } } }))).toEqual(['d5']);
    // Dates are kept to the millisecond (as stored): finer fractions are dropped.
    expect(sorted(await browse({ filters: { created_at: { gte: '2024-03-01T00:00:00.0009999999Z' } } }))).toEqual(['d4', 'd5']);
    expect(sorted(await browse({ filters: { created_at: { gte: '2024-03-01T00:00:00.0019999999Z' } } }))).toEqual(['d5']);
  });

  test('filters combine with AND, and apply to queries too', async () => {
    expect(await browse({ filters: { type: 'post', metadata: { category: 'news' }, modified_at: { gte: '2024-03-01T00:00:00Z' } } })).toEqual(['d2']);
    const hits = await browse({ query: 'release', filters: { uri: ['https://ex.com/alpha'] } });
    expect(hits).toEqual(['d1']);
  });
});

describe('sort', () => {
  test('by a date ascending (default) and descending; documents without the field last', async () => {
    expect(await browse({ sort: [{ field: 'created_at' }] })).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
    expect(await browse({ sort: [{ field: 'created_at', order: 'desc' }] })).toEqual(['d5', 'd4', 'd3', 'd2', 'd1', 'd6']);
    expect(await browse({ sort: [{ field: 'modified_at', order: 'desc' }], filters: { type: 'post' } })).toEqual(['d2', 'd1', 'd6']);
  });

  test('by keyword fields and several keys', async () => {
    expect(await browse({ sort: [{ field: 'title.keyword' }] })).toEqual(['d1', 'd2', 'd5', 'd3', 'd4', 'd6']);
    expect(await browse({ sort: [{ field: 'language', order: 'desc' }, { field: 'created_at', order: 'desc' }] })).toEqual(['d5', 'd4', 'd2', 'd1', 'd6', 'd3']);
    expect(await browse({ sort: [{ field: 'metadata.category' }, { field: 'uri', order: 'desc' }] })).toEqual(['d4', 'd3', 'd2', 'd1', 'd5', 'd6']);
  });

  test('with a query, the documents matching its words come in field order, with snippets', async () => {
    const body = await kb.searchOk(collection, { query: 'release', sort: [{ field: 'created_at', order: 'desc' }] });
    expect(ids(body)).toEqual(['d2', 'd1']);
    expect(body.citations[0].snippets[0]).toContain('<em>release</em>');
  });
});

describe('aggregations', () => {
  test('terms: buckets by count, size default 10, other_doc_count 0 when complete', async () => {
    const body = await kb.searchOk(collection, { aggregations: [{ name: 'types', type: 'terms', field: 'type' }] }); // the spec's array form
    expect(body.aggregations.types).toEqual({
      buckets: [{ key: 'post', doc_count: 3 }, { key: 'page', doc_count: 2 }, { key: 'product', doc_count: 1 }],
      other_doc_count: 0,
    });
  });

  test('terms truncated by size: other_doc_count counts the documents left out', async () => {
    const body = await kb.searchOk(collection, { aggregations: { types: { type: 'terms', field: 'type', size: 1 } } });
    expect(body.aggregations.types).toEqual({ buckets: [{ key: 'post', doc_count: 3 }], other_doc_count: 3 });
  });

  test('terms on language, uri, title.keyword and metadata fields', async () => {
    const body = await kb.searchOk(collection, {
      filters: { type: ['page', 'product'] },
      aggregations: {
        languages: { type: 'terms', field: 'language' },
        uris: { type: 'terms', field: 'uri', size: 2 },
        titles: { type: 'terms', field: 'title.keyword' },
        tags: { type: 'terms', field: 'metadata.tags' },
      },
    });
    expect(body.aggregations.languages.buckets).toEqual([{ key: 'de', doc_count: 1 }, { key: 'en', doc_count: 1 }, { key: 'fr', doc_count: 1 }]);
    expect(body.aggregations.uris.buckets).toHaveLength(2);
    expect(body.aggregations.uris.other_doc_count).toBe(1);
    expect(body.aggregations.titles.buckets.map((b: { key: string }) => b.key)).toEqual(['Boutique', 'Handbuch', 'Installation guide']);
    expect(body.aggregations.tags).toEqual({ buckets: [{ key: 'c', doc_count: 1 }], other_doc_count: 0 });
  });

  test('date_histogram by calendar month and fixed interval; keys are RFC 3339', async () => {
    const body = await kb.searchOk(collection, {
      aggregations: {
        monthly: { type: 'date_histogram', field: 'created_at', interval: 'month' },
        weekly: { type: 'date_histogram', field: 'modified_at', interval: '7d' },
      },
    });
    expect(body.aggregations.monthly).toEqual({
      buckets: [
        { key: '2024-01-01T00:00:00.000Z', doc_count: 2 },
        { key: '2024-02-01T00:00:00.000Z', doc_count: 1 },
        { key: '2024-03-01T00:00:00.000Z', doc_count: 2 },
      ],
    });
    const weekly = body.aggregations.weekly.buckets as { key: string; doc_count: number }[];
    expect(weekly.reduce((n, b) => n + b.doc_count, 0)).toBe(3);
    for (const bucket of weekly) expect(new Date(bucket.key).toISOString()).toBe(bucket.key);
  });

  test('a fixed-interval bucket that would start before year 0 is keyed 0000-01-01 (RFC 3339 has no negative years)', async () => {
    const early = await kb.newCollection();
    await kb.index(early, [{ id: 'y0', content: 'year zero', created_at: '0000-01-01T00:00:00Z' }, { id: 'y1', content: 'later', created_at: '0001-06-01T00:00:00Z' }]);
    for (const interval of ['7d', 'week', '999999d']) {
      const body = await kb.searchOk(early, { aggregations: { h: { type: 'date_histogram', field: 'created_at', interval } } });
      const buckets = body.aggregations.h.buckets as { key: string; doc_count: number }[];
      expect(buckets[0]).toEqual({ key: '0000-01-01T00:00:00.000Z', doc_count: 1 + (interval === '999999d' ? 1 : 0) });
      for (const bucket of buckets) expect(bucket.key).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
  });

  test('min and max on dates give RFC 3339 values; null when no document has one', async () => {
    const body = await kb.searchOk(collection, {
      aggregations: { first: { type: 'min', field: 'created_at' }, last: { type: 'max', field: 'modified_at' } },
    });
    expect(body.aggregations).toEqual({ first: { value: '2024-01-10T00:00:00.000Z' }, last: { value: '2024-03-05T00:00:00.000Z' } });
    const none = await kb.searchOk(collection, { filters: { type: 'product' }, aggregations: { last: { type: 'max', field: 'modified_at' } } });
    expect(none.aggregations).toEqual({ last: { value: null } });
  });

  test('with a query, aggregations count the documents matching its words; absent unless requested', async () => {
    const body = await kb.searchOk(collection, { query: 'release', aggregations: { types: { type: 'terms', field: 'type' } } });
    expect(body.aggregations.types).toEqual({ buckets: [{ key: 'post', doc_count: 2 }], other_doc_count: 0 });
    expect(await kb.searchOk(collection, { query: 'release' })).not.toHaveProperty('aggregations');
  });
});

describe('results', () => {
  test('query-less search: no snippets, score 0, citation fields present; top_n caps the results (default 10)', async () => {
    const body = await kb.searchOk(collection, { filters: { type: 'post' }, sort: [{ field: 'created_at' }] });
    expect(body.citations[0]).toEqual({ id: 'd1', title: 'Alpha release notes', uri: 'https://ex.com/alpha', type: 'post', score: 0 });
    for (const c of body.citations) expect(c).not.toHaveProperty('snippets');
    expect((await kb.searchOk(collection, { top_n: 2 })).citations).toHaveLength(2);
    const many = await kb.newCollection();
    await kb.index(many, Array.from({ length: 12 }, (_, i) => ({ id: `m${i}`, content: `item ${i}` })));
    expect((await kb.searchOk(many, {})).citations).toHaveLength(10);
    expect((await kb.searchOk(many, { query: '   ' })).citations[0]).not.toHaveProperty('snippets');
  });

  test('with a query: snippets are HTML-escaped fragments with the matches marked; higher score first', async () => {
    const target = await kb.newCollection();
    await kb.index(target, [{ id: 'x', title: 'Escaping', content: 'Use <script> tags carefully: the script tag runs code.' }]);
    const body = await kb.searchOk(target, { query: 'script' });
    expect(body.citations[0].snippets[0]).toBe('Use &lt;<em>script</em>&gt; tags carefully: the <em>script</em> tag runs code.');
    const ranked = await kb.searchOk(collection, { query: 'release notes search' });
    const scores = ranked.citations.map((c: { score: number }) => c.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores[0]).toBeGreaterThan(0);
  });

  test('isolation: other collections of the same project are never searched or counted', async () => {
    const other = await kb.newCollection();
    await kb.index(other, [{ id: 'd1', title: 'Alpha release notes', content: 'impostor release', type: 'post' }, { id: 'o2', content: 'release', type: 'post' }]);
    const body = await kb.searchOk(collection, { query: 'release', aggregations: { types: { type: 'terms', field: 'type' } } });
    expect(sorted(ids(body)).filter((id) => id.startsWith('o'))).toEqual([]);
    expect(body.aggregations.types.buckets).toEqual([{ key: 'post', doc_count: 2 }]);
    expect(body.citations.find((c: { id: string }) => c.id === 'd1').snippets.join(' ')).not.toContain('impostor');
  });

  test('the session header is logged only for a session of the caller project, and never changes the response', async () => {
    const agentId = `agent_${randomUUID()}`;
    const sessionId = `sess_${randomUUID()}`;
    await api.deps.db.query('INSERT INTO agents (id, project_id, name, model) VALUES ($1, $2, $3, $4)', [agentId, tenant.projectId, 'a', 'simulator/x']);
    await api.deps.db.query('INSERT INTO sessions (id, project_id, agent_id) VALUES ($1, $2, $3)', [sessionId, tenant.projectId, agentId]);
    const foreign = await tenantWithClient(api);
    const foreignAgent = `agent_${randomUUID()}`;
    const foreignSession = `sess_${randomUUID()}`;
    await api.deps.db.query('INSERT INTO agents (id, project_id, name, model) VALUES ($1, $2, $3, $4)', [foreignAgent, foreign.tenant.projectId, 'a', 'simulator/x']);
    await api.deps.db.query('INSERT INTO sessions (id, project_id, agent_id) VALUES ($1, $2, $3)', [foreignSession, foreign.tenant.projectId, foreignAgent]);

    const body = { query: 'release', aggregations: { t: { type: 'terms', field: 'type' } } };
    const plain = await kb.search(collection, body);
    const own = await kb.search(collection, body, { 'X-Session-Id': sessionId });
    const other = await kb.search(collection, body, { 'X-Session-Id': foreignSession });
    const junk = await kb.search(collection, body, { 'X-Session-Id': 'x'.repeat(500) });
    for (const response of [own, other, junk]) {
      expect(response.status).toBe(200);
      expect(response.body).toEqual(plain.body);
    }
    const logged = (id: string) => api.logs.some((line) => line.includes(`"session_id":"${id}"`));
    expect(logged(sessionId)).toBe(true);
    expect(logged(foreignSession)).toBe(false);
  });
});

describe('validation (400)', () => {
  const cases: [string, object, string][] = [
    ['interval on terms', { aggregations: { a: { type: 'terms', field: 'type', interval: 'month' } } }, 'aggregations.a.interval'],
    ['interval on min', { aggregations: { a: { type: 'min', field: 'created_at', interval: 'day' } } }, 'aggregations.a.interval'],
    ['size on date_histogram', { aggregations: { a: { type: 'date_histogram', field: 'created_at', interval: 'day', size: 3 } } }, 'aggregations.a.size'],
    ['size on max', { aggregations: { a: { type: 'max', field: 'created_at', size: 3 } } }, 'aggregations.a.size'],
    ['date_histogram without interval', { aggregations: { a: { type: 'date_histogram', field: 'created_at' } } }, 'interval is required'],
    ['bad interval', { aggregations: { a: { type: 'date_histogram', field: 'created_at', interval: 'fortnight' } } }, 'interval must be'],
    ['terms on an unknown field', { aggregations: { a: { type: 'terms', field: 'content' } } }, 'aggregations.a.field'],
    ['terms on a date', { aggregations: { a: { type: 'terms', field: 'created_at' } } }, 'aggregations.a.field'],
    ['min on a keyword', { aggregations: { a: { type: 'min', field: 'type' } } }, 'aggregations.a.field'],
    ['date_histogram on a keyword', { aggregations: { a: { type: 'date_histogram', field: 'language', interval: 'day' } } }, 'aggregations.a.field'],
    ['unknown aggregation type', { aggregations: { a: { type: 'avg', field: 'created_at' } } }, 'aggregations.a.type'],
    ['terms size 0', { aggregations: { a: { type: 'terms', field: 'type', size: 0 } } }, 'aggregations.a.size'],
    ['bad aggregation name', { aggregations: { 'a b': { type: 'terms', field: 'type' } } }, 'aggregation names'],
    // As a key it would set the response object's prototype instead of adding an entry.
    ['aggregation named __proto__', { aggregations: [{ name: '__proto__', type: 'terms', field: 'type' }] }, 'aggregations.0.name'],
    ['top_n 0', { top_n: 0 }, 'top_n'],
    ['top_n 51', { top_n: 51 }, 'top_n'],
    ['top_n fractional', { top_n: 2.5 }, 'top_n'],
    ['top_n a string', { top_n: '5' }, 'top_n'],
    ['unknown filter', { filters: { author: 'me' } }, 'author'],
    ['filter with an empty array', { filters: { type: [] } }, 'filters.type'],
    ['filter date not RFC 3339', { filters: { created_at: { gte: 'yesterday' } } }, 'filters.created_at.gte'],
    ['filter date past the year 9999 in UTC', { filters: { created_at: { lte: '9999-12-31T23:59:59-18:00' } } }, 'years 0000-9999'],
    // No stored value is longer (uri: 2048); Elasticsearch itself fails past 32766 bytes.
    ['filter value too long', { filters: { uri: 'x'.repeat(2049) } }, 'filters.uri'],
    ['metadata filter value too long', { filters: { metadata: { k: ['ok', 'é'.repeat(40_000)] } } }, 'filters.metadata.k.1'],
    ['filter date range reversed', { filters: { created_at: { gte: '2024-02-01T00:00:00Z', lte: '2024-01-01T00:00:00Z' } } }, 'gte must not be after lte'],
    ['filter date unknown bound', { filters: { modified_at: { gt: '2024-02-01T00:00:00Z' } } }, 'gt'],
    ['metadata filter value a number', { filters: { metadata: { a: 1 } } }, 'filters.metadata.a'],
    ['sort on an unknown field', { sort: [{ field: 'content' }] }, 'unknown sort field'],
    ['sort order invalid', { sort: [{ field: 'type', order: 'up' }] }, 'sort.0.order'],
    ['query too long', { query: 'q'.repeat(1001) }, 'query'],
    ['query not a string', { query: 5 }, 'query'],
    ['unknown top-level field', { q: 'x' }, 'q'],
  ];
  test.each(cases)('%s', async (_label, body, fragment) => {
    const response = await kb.search(collection, body);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
    expect(response.body.error.message).toContain(fragment);
  });

  test('top_n 50 and 1 are accepted; an empty body browses', async () => {
    expect((await kb.search(collection, { top_n: 50 })).status).toBe(200);
    expect((await kb.search(collection, { top_n: 1 })).body.citations).toHaveLength(1);
    const response = await fetch(`${api.url}/v1/kb/collections/${collection}/search`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` } });
    expect(response.status).toBe(200);
  });
});
