import type { FilterCeiling } from '../../../src/domain/kb';
import { fetchDocument, searchCollection } from '../../../src/search/grounding';
import { startApi, type TestApi } from '../../support/harness';
import { ensureLocalModel, tenantWithClient } from './kb-client';

let api: TestApi;
let projectId: string;
let collectionId: string;

const DOCS = [
  { id: 'en-post', title: 'Pricing plans', content: 'Our pricing plans start at ten dollars a month.', type: 'post', uri: 'https://ex.com/pricing', language: 'en', created_at: '2024-01-15T00:00:00Z', modified_at: '2024-02-01T00:00:00Z', metadata: { audience: ['public'], region: 'eu' } },
  { id: 'de-page', title: 'Preise', content: 'Unsere pricing plans beginnen bei zehn Euro.', type: 'page', uri: 'https://ex.com/de/preise', language: 'de', created_at: '2024-03-01T00:00:00Z', metadata: { audience: 'internal' } },
  { id: 'untitled', content: 'Internal pricing plans memo without a title or URL.' },
];

beforeAll(async () => {
  await ensureLocalModel();
  api = await startApi();
  const { tenant, kb } = await tenantWithClient(api);
  projectId = tenant.projectId;
  collectionId = await kb.newCollection('grounding');
  await kb.index(collectionId, DOCS);
});
afterAll(async () => {
  await api.close();
});

const search = (ceiling?: FilterCeiling | null, filters?: unknown) =>
  searchCollection(api.deps, { projectId, collectionId, query: 'pricing plans', filters, topN: 10, ceiling });
const fetchOne = (documentId: string, ceiling?: FilterCeiling | null) => fetchDocument(api.deps, { projectId, collectionId, documentId, ceiling });
const hitIds = (result: Awaited<ReturnType<typeof search>>) => (result.status === 'ok' ? result.results.map((r) => r.id).sort() : result.status);

describe('searchCollection', () => {
  test('returns hits with snippets and citation data; documents without uri or title get stable fallbacks', async () => {
    const result = await search();
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    expect(result.results.map((r) => r.id).sort()).toEqual(['de-page', 'en-post', 'untitled']);
    const enPost = result.results.find((r) => r.id === 'en-post')!;
    expect(enPost).toMatchObject({ document_uri: 'https://ex.com/pricing', document_title: 'Pricing plans', type: 'post', score: expect.any(Number) });
    expect(enPost.snippets.join(' ')).toContain('<em>pricing</em>');
    expect(result.results.find((r) => r.id === 'untitled')).toMatchObject({ document_uri: `kb://${collectionId}/untitled`, document_title: 'untitled' });
  });

  test('the ceiling bounds every dimension; the caller filters only narrow it', async () => {
    expect(hitIds(await search({ language: ['de'] }))).toEqual(['de-page']);
    expect(hitIds(await search({ type: ['post', 'page'], uri: null }))).toEqual(['de-page', 'en-post']);
    expect(hitIds(await search({ uri: ['https://ex.com/pricing'] }))).toEqual(['en-post']);
    expect(hitIds(await search({ metadata: { audience: ['public'] } }))).toEqual(['en-post']);
    expect(hitIds(await search({ created_at: { gte: '2024-02-01T00:00:00Z' } }))).toEqual(['de-page']);
    expect(hitIds(await search({ modified_at: { lte: '2024-02-01T00:00:00Z' } }))).toEqual(['en-post']);
    expect(hitIds(await search({ type: [] }))).toEqual([]);
    // A filter outside the ceiling cannot widen it.
    expect(hitIds(await search({ language: ['de'] }, { language: ['en'] }))).toEqual([]);
    expect(hitIds(await search({ type: ['post', 'page'] }, { type: 'page' }))).toEqual(['de-page']);
  });

  test('bad filters from the model are reported, not thrown; unknown or foreign collection is not_found', async () => {
    expect(await search(null, { colour: 'red' })).toMatchObject({ status: 'invalid_arguments', field: expect.stringContaining('filters') });
    expect(await searchCollection(api.deps, { projectId, collectionId, query: '  ' })).toMatchObject({ status: 'invalid_arguments', field: 'query' });
    const other = await tenantWithClient(api);
    expect(await searchCollection(api.deps, { projectId: other.tenant.projectId, collectionId, query: 'pricing' })).toEqual({ status: 'not_found' });
    expect(await searchCollection(api.deps, { projectId, collectionId: 'kbc_missing', query: 'pricing' })).toEqual({ status: 'not_found' });
  });
});

describe('fetchDocument', () => {
  test('returns the document with citation data', async () => {
    expect(await fetchOne('en-post')).toEqual({
      status: 'found',
      collection_id: collectionId,
      ...DOCS[0],
      created_at: '2024-01-15T00:00:00.000Z',
      modified_at: '2024-02-01T00:00:00.000Z',
      document_uri: 'https://ex.com/pricing',
      document_title: 'Pricing plans',
    });
  });

  test('a document failing any ceiling dimension is not_found; a missing field fails a constrained dimension', async () => {
    const failing: FilterCeiling[] = [
      { type: ['page'] },
      { uri: ['https://ex.com/other'] },
      { language: ['de'] },
      { metadata: { audience: ['internal'] } },
      { metadata: { region: ['us'] } },
      { created_at: { gte: '2024-01-16T00:00:00Z' } },
      { modified_at: { lte: '2024-01-31T23:59:59Z' } },
      { type: [] },
    ];
    for (const ceiling of failing) expect([ceiling, await fetchOne('en-post', ceiling)]).toEqual([ceiling, { status: 'not_found' }]);
    const passing: FilterCeiling[] = [
      { type: ['post'], uri: null, language: ['EN'], metadata: { audience: ['public', 'x'] }, created_at: { gte: '2024-01-15T00:00:00Z', lte: '2024-01-15T00:00:00Z' } },
      { modified_at: { gte: '2024-01-01T00:00:00+01:00' } },
      {},
    ];
    for (const ceiling of passing) expect((await fetchOne('en-post', ceiling)).status).toBe('found');
    expect(await fetchOne('untitled', { type: ['post'] })).toEqual({ status: 'not_found' });
    expect(await fetchOne('untitled', { modified_at: { lte: '2030-01-01T00:00:00Z' } })).toEqual({ status: 'not_found' });
  });

  test('absent documents, unknown collections and other projects are not_found', async () => {
    expect(await fetchOne('nope')).toEqual({ status: 'not_found' });
    const other = await tenantWithClient(api);
    expect(await fetchDocument(api.deps, { projectId: other.tenant.projectId, collectionId, documentId: 'en-post' })).toEqual({ status: 'not_found' });
  });
});
