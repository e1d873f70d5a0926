import { startApi, type TestApi } from '../../support/harness';
import { ensureLocalModel, ids, tenantWithClient, type KbClient } from './kb-client';

let api: TestApi;
let kb: KbClient;
let collection: string;
beforeAll(async () => {
  await ensureLocalModel();
  api = await startApi();
  ({ kb } = await tenantWithClient(api));
  collection = await kb.newCollection();
});
afterAll(async () => {
  await api.close();
});

describe('POST /documents/bulk: the request', () => {
  test('more than 100 documents is a 400 for the whole request, and nothing is indexed', async () => {
    const documents = Array.from({ length: 101 }, (_, i) => ({ id: `over-${i}`, content: 'overflow' }));
    const response = await kb.bulk(collection, documents);
    expect(response.status).toBe(400);
    expect(response.body.error.message).toContain('at most 100 documents');
    expect((await kb.call('GET', `/${collection}/documents/over-0`)).status).toBe(404);
  });

  test('exactly 100 documents are accepted', async () => {
    const target = await kb.newCollection();
    const documents = Array.from({ length: 100 }, (_, i) => ({ id: `d${i}`, content: `document number ${i}` }));
    const response = await kb.bulk(target, documents);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBe(false);
    expect(response.body.items).toHaveLength(100);
  });

  test('documents must be a non-empty array; unknown envelope fields are refused', async () => {
    for (const body of [{}, { documents: [] }, { documents: {} }, { documents: [{ content: 'x' }], extra: 1 }]) {
      const response = await kb.call('POST', `/${collection}/documents/bulk`, body);
      expect(response.status).toBe(400);
    }
  });

  test('bodies above 1 MiB (the default limit) are accepted up to the bulk limit', async () => {
    const documents = Array.from({ length: 20 }, (_, i) => ({ id: `big-${i}`, content: `${'lorem ipsum '.repeat(8000)} marker${i}` }));
    const response = await kb.bulk(collection, documents);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBe(false);
  });
});

describe('POST /documents/bulk: each item on its own', () => {
  const invalid: [string, unknown, string][] = [
    ['content missing', { id: 'x1', title: 'no content' }, 'content'],
    ['content not a string', { id: 'x2', content: 5 }, 'content'],
    ['item not an object', 'just text', ''],
    ['language not ISO 639-1', { id: 'x3', content: 'c', language: 'english' }, 'language: must be an ISO 639-1 language code'],
    ['language unknown code', { id: 'x4', content: 'c', language: 'xx' }, 'language'],
    ['created_at not RFC 3339', { id: 'x5', content: 'c', created_at: '2024-13-01' }, 'created_at'],
    ['modified_at without zone', { id: 'x6', content: 'c', modified_at: '2024-01-01T10:00:00' }, 'modified_at'],
    ['metadata value a number', { id: 'x7', content: 'c', metadata: { n: 1 } }, 'metadata'],
    ['metadata value an object', { id: 'x8', content: 'c', metadata: { o: { a: 'b' } } }, 'metadata'],
    ['metadata array of numbers', { id: 'x9', content: 'c', metadata: { tags: [1, 2] } }, 'metadata'],
    ['metadata key with a dot', { id: 'x10', content: 'c', metadata: { 'a.b': 'v' } }, "metadata.a.b: invalid key 'a.b'"],
    ['metadata not an object', { id: 'x11', content: 'c', metadata: ['a'] }, 'metadata'],
    ['uri not a URL', { id: 'x12', content: 'c', uri: 'not a url' }, 'uri: must be an absolute http(s) URL'],
    ['uri a script link', { id: 'x13', content: 'c', uri: 'javascript:alert(document.cookie)' }, 'uri: must be an absolute http(s) URL'],
    ['id empty', { id: '', content: 'c' }, 'id'],
    ['id too long', { id: 'i'.repeat(257), content: 'c' }, 'id: must be at most 256 bytes'],
    ['id not a string', { id: 7, content: 'c' }, 'id'],
    ['unknown field', { id: 'x13', content: 'c', author: 'me' }, 'author'],
    ['title too long', { id: 'x14', content: 'c', title: 't'.repeat(1025) }, 'title'],
    ['created_at past the year 9999 in UTC', { id: 'x15', content: 'c', created_at: '9999-12-31T23:59:59-18:00' }, 'created_at: must fall within the years 0000-9999'],
    // Characters are code points: 1025 emoji is one too many.
    ['metadata string too long', { id: 'x16', content: 'c', metadata: { k: '😀'.repeat(1025) } }, 'metadata strings are at most 1024 characters'],
  ];

  test.each(invalid)('%s: that item alone gets 400 with a reason', async (_label, bad, fragment) => {
    const goodId = `good-${Math.random().toString(36).slice(2)}`;
    const response = await kb.bulk(collection, [{ id: goodId, content: 'fine' }, bad]);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBe(true);
    const [good, rejected] = response.body.items;
    expect(good).toEqual({ id: goodId, status: 201, result: 'created' });
    expect(rejected.status).toBe(400);
    expect(rejected.result).toBe('failed');
    expect(rejected.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
    expect(rejected.error.message).toContain(fragment);
    if (typeof (bad as { id?: unknown }).id === 'string') expect(rejected.id).toBe((bad as { id: string }).id);
  });

  test('an item the JSON rules refuse (lone surrogate, __proto__ key, nesting past 128 levels) fails alone; the others are indexed', async () => {
    const target = await kb.newCollection();
    let deep = '"x"';
    for (let i = 0; i < 130; i++) deep = `[${deep}]`;
    const body = `{"documents":[{"id":"good","content":"fine"},{"id":"s","content":"c","title":"\\ud800"},{"id":"p","content":"c","metadata":{"__proto__":"x"}},{"id":"d","content":"c","metadata":{"k":${deep}}},{"id":"good2","content":"fine"}]}`;
    const response = await kb.call('POST', `/${target}/documents/bulk`, body, { 'content-type': 'application/json' });
    expect(response.status).toBe(200);
    expect(response.body.items.map((item: { id?: string; status: number }) => [item.id, item.status])).toEqual([['good', 201], ['s', 400], ['p', 400], ['d', 400], ['good2', 201]]);
    expect(response.body.items[1].error.message).toContain('documents.1.title contains an unpaired UTF-16 surrogate');
    expect(response.body.items[2].error.message).toContain('__proto__');
    expect(response.body.items[3].error.message).toContain('deeper than 128 levels');
    expect((await kb.call('GET', `/${target}/documents/good2`)).status).toBe(200);
    // The envelope keeps the whole-body rules.
    const envelope = await kb.call('POST', `/${target}/documents/bulk`, '{"documents":[{"content":"x"}],"\\ud800":1}', { 'content-type': 'application/json' });
    expect(envelope.status).toBe(400);
  });

  test('all valid fields are stored; dates are normalised to UTC; language lower-cased', async () => {
    const document = {
      id: 'full',
      content: 'The full document body.',
      title: 'Full document',
      type: 'post',
      uri: 'https://example.com/full',
      language: 'EN',
      created_at: '2024-03-01T12:00:00+02:00',
      // RFC 3339 allows lower-case designators.
      modified_at: '2024-03-02t08:30:00z',
      metadata: { category: 'news', tags: ['a', 'b'] },
    };
    const response = await kb.bulk(collection, [document]);
    expect(response.body.items[0]).toMatchObject({ id: 'full', status: expect.any(Number) });
    const fetched = await kb.call('GET', `/${collection}/documents/full`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual({
      ...document,
      language: 'en',
      created_at: '2024-03-01T10:00:00.000Z',
      modified_at: '2024-03-02T08:30:00.000Z',
      collection_id: collection,
    });
  });

  test('the longest accepted title and metadata strings (1024 characters of emoji) are still sorted, filtered and counted', async () => {
    const own = await kb.newCollection('long-values');
    const emoji = '😀'.repeat(1024); // 2048 UTF-16 units
    const response = await kb.bulk(own, [
      { id: 'long', content: 'c', title: emoji, metadata: { k: emoji } },
      { id: 'short', content: 'c', title: 'Zebra', metadata: { k: 'z' } },
    ]);
    expect(response.body.errors).toBe(false);
    const sortedDesc = await kb.searchOk(own, { sort: [{ field: 'title.keyword', order: 'desc' }] });
    expect(ids(sortedDesc)).toEqual(['long', 'short']);
    const filtered = await kb.searchOk(own, { filters: { metadata: { k: emoji } } });
    expect(ids(filtered)).toEqual(['long']);
    const counted = await kb.searchOk(own, { aggregations: [{ name: 'titles', type: 'terms', field: 'title.keyword' }] });
    expect(counted.aggregations.titles.buckets).toHaveLength(2);
  });

  test('generated ids when omitted; the document is searchable as soon as the response returns', async () => {
    const word = `zq${Math.random().toString(36).slice(2, 10)}`;
    const response = await kb.bulk(collection, [{ content: `freshly indexed ${word}` }]);
    const id = response.body.items[0].id;
    expect(id).toEqual(expect.any(String));
    expect(response.body.items[0]).toMatchObject({ status: 201, result: 'created' });
    const found = await kb.searchOk(collection, { query: word });
    expect(ids(found)[0]).toBe(id);
    expect(found.citations[0].snippets[0]).toContain(`<em>${word}</em>`);
  });

  test('same id replaces the document (idempotent): created then updated, one copy, new content', async () => {
    const target = await kb.newCollection();
    const first = await kb.bulk(target, [{ id: 'same', content: 'original wording', title: 'v1', metadata: { v: '1' } }]);
    expect(first.body.items[0]).toEqual({ id: 'same', status: 201, result: 'created' });
    const second = await kb.bulk(target, [{ id: 'same', content: 'replacement wording', title: 'v2' }]);
    expect(second.body.items[0]).toEqual({ id: 'same', status: 200, result: 'updated' });
    const fetched = await kb.call('GET', `/${target}/documents/same`);
    expect(fetched.body).toEqual({ id: 'same', content: 'replacement wording', title: 'v2', collection_id: target });
    expect(ids(await kb.searchOk(target, {}))).toEqual(['same']);
    const hit = (await kb.searchOk(target, { query: 'replacement' })).citations[0];
    expect(hit).toMatchObject({ id: 'same', title: 'v2', snippets: ['<em>replacement</em> wording'] });
  });

  test('metadata keys are not index fields: one tenant sending 6,400 distinct keys leaves every other tenant able to add new ones', async () => {
    // With a mapped field per key, the shared index's field limit (5,000) filled up for everyone.
    const tag = Math.random().toString(36).slice(2, 8);
    const target = await kb.newCollection();
    for (const batch of [0, 1]) {
      const documents = Array.from({ length: 50 }, (_, i) => ({
        id: `keys-${batch}-${i}`,
        content: 'many keys',
        metadata: Object.fromEntries(Array.from({ length: 64 }, (_, k) => [`k_${tag}_${batch}_${i}_${k}`, 'v'])),
      }));
      await kb.index(target, documents);
    }
    const { kb: other } = await tenantWithClient(api);
    const theirs = await other.newCollection();
    await other.index(theirs, [{ id: 'fresh', content: 'a new key', metadata: { [`brand_new_${tag}`]: 'yes' } }]);
    const found = await other.searchOk(theirs, { filters: { metadata: { [`brand_new_${tag}`]: ['yes'] } } });
    expect(found.citations.map((c: { id: string }) => c.id)).toEqual(['fresh']);
    const mine = await kb.searchOk(target, { filters: { metadata: { [`k_${tag}_1_49_63`]: ['v'] } } });
    expect(mine.citations.map((c: { id: string }) => c.id)).toEqual(['keys-1-49']);
  });

  test('the same document id in two collections is two documents', async () => {
    const a = await kb.newCollection();
    const b = await kb.newCollection();
    await kb.index(a, [{ id: 'shared', content: 'in collection a' }]);
    await kb.index(b, [{ id: 'shared', content: 'in collection b' }]);
    expect((await kb.call('GET', `/${a}/documents/shared`)).body.content).toBe('in collection a');
    expect((await kb.call('GET', `/${b}/documents/shared`)).body.content).toBe('in collection b');
  });
});

describe('an index whose writes are blocked (kb migrate-index copying it)', () => {
  test('bulk items and deletes are 503, retryable, not 400 or 500', async () => {
    const prefix = `blocked-${Math.random().toString(36).slice(2, 8)}`;
    const own = await startApi({ ELASTICSEARCH_INDEX_PREFIX: prefix });
    try {
      const { kb: client } = await tenantWithClient(own);
      const target = await client.newCollection();
      await client.index(target, [{ id: 'before', content: 'written before the block' }]);
      await own.deps.search.indices.putSettings({ index: `${prefix}-documents`, settings: { 'index.blocks.write': true } });
      const response = await client.bulk(target, [{ id: 'during', content: 'x' }]);
      expect(response.body.items[0]).toMatchObject({ id: 'during', status: 503, result: 'failed' });
      // Deletes are refused the same way: 503 with Retry-After, and nothing is half-deleted.
      const one = await client.call('DELETE', `/${target}/documents/before`);
      expect([one.status, one.headers.get('retry-after')]).toEqual([503, expect.any(String)]);
      expect((await client.call('DELETE', `/${target}`)).status).toBe(503);
      expect((await client.call('GET', `/${target}/documents/before`)).status).toBe(200);
    } finally {
      await own.deps.search.indices.delete({ index: `${prefix}-*` }).catch(() => undefined);
      await own.close();
    }
  });
});

describe('DELETE a collection while a bulk request is in flight', () => {
  test('no document of the deleted collection stays in the index, whichever finishes first', async () => {
    const target = await kb.newCollection();
    const documents = Array.from({ length: 100 }, (_, i) => ({ id: `race-${i}`, content: `${'a paragraph of text to embed, '.repeat(40)} number ${i}` }));
    const bulk = kb.bulk(target, documents);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const deleted = await kb.call('DELETE', `/${target}`);
    const indexed = await bulk;
    expect(deleted.status).toBe(200);
    expect([200, 404]).toContain(indexed.status);
    await api.deps.search.indices.refresh({ index: 'test-kb-documents' });
    const left = await api.deps.search.count({ index: 'test-kb-documents', query: { term: { collection_id: target } } });
    expect(left.count).toBe(0);
  });
});

describe('GET and DELETE one document', () => {
  test("ids '.' and '..' are refused per item (clients collapse them in paths: DELETE .../documents/.. would reach the collection)", async () => {
    const target = await kb.newCollection();
    const response = await kb.bulk(target, [{ id: '.', content: 'x' }, { id: '..', content: 'x' }, { id: '...', content: 'x' }]);
    expect(response.body.items.map((item: { status: number }) => item.status)).toEqual([400, 400, 201]);
    expect(response.body.items[1].error.message).toContain("must not be '.' or '..'");
  });

  test('an id no stored document can have (over 256 UTF-8 bytes) is 404 on GET and DELETE, never a 5xx', async () => {
    const id = encodeURIComponent('€'.repeat(500));
    expect((await kb.call('GET', `/${collection}/documents/${id}`)).status).toBe(404);
    expect((await kb.call('DELETE', `/${collection}/documents/${id}`)).status).toBe(404);
  });

  test('ids with reserved URL characters round-trip when encoded', async () => {
    const id = 'posts/2024 #1?x=y';
    await kb.index(collection, [{ id, content: 'odd id' }]);
    const fetched = await kb.call('GET', `/${collection}/documents/${encodeURIComponent(id)}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.id).toBe(id);
  });

  test('delete removes it from get and search; a second delete is 404', async () => {
    const word = `gone${Math.random().toString(36).slice(2, 8)}`;
    await kb.index(collection, [{ id: 'to-delete', content: `delete me ${word}` }]);
    const deleted = await kb.call('DELETE', `/${collection}/documents/to-delete`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: 'to-delete', deleted: true });
    expect((await kb.call('GET', `/${collection}/documents/to-delete`)).status).toBe(404);
    expect(ids(await kb.searchOk(collection, { query: `delete me ${word}` }))).not.toContain('to-delete');
    expect((await kb.call('DELETE', `/${collection}/documents/to-delete`)).status).toBe(404);
  });
});
