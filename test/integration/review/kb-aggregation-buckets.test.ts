import { startApi, type TestApi } from '../../support/harness';
import { ensureLocalModel, tenantWithClient, type KbClient } from '../kb/kb-client';

/**
 * A date_histogram's interval is the caller's choice: one too fine for the documents'
 * date range makes Elasticsearch refuse the search (too_many_buckets_exception). That is a
 * bad request to answer with a 400 naming `aggregations`, not a 500 (nor a 503 that
 * invites a retry which can never succeed).
 */
let api: TestApi;
let kb: KbClient;
let collection: string;
beforeAll(async () => {
  await ensureLocalModel();
  api = await startApi();
  ({ kb } = await tenantWithClient(api));
  collection = await kb.newCollection();
  await kb.index(collection, [
    { id: 'old', content: 'an old post', created_at: '2000-01-01T00:00:00Z' },
    { id: 'new', content: 'a new post', created_at: '2024-01-01T00:00:00Z' },
  ]);
});
afterAll(() => api.close());

test('an interval that would create too many buckets: 400', async () => {
  const response = await kb.search(collection, { aggregations: { per_ms: { type: 'date_histogram', field: 'created_at', interval: '1ms' } } });
  expect(response.status).toBe(400);
  expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
  expect(response.body.error.message).toMatch(/^aggregations/);
  expect(response.body.error.message).not.toMatch(/65536|max_buckets|exception/);
});

test('the same with a query (hybrid search, one msearch): 400, not 500', async () => {
  const response = await kb.search(collection, { query: 'post', aggregations: { per_ms: { type: 'date_histogram', field: 'created_at', interval: '1ms' } } });
  expect(response.status).toBe(400);
  expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
  expect(response.body.error.message).toMatch(/^aggregations/);
});

test('a reasonable interval still aggregates', async () => {
  const response = await kb.search(collection, { aggregations: { per_year: { type: 'date_histogram', field: 'created_at', interval: 'year' } } });
  expect(response.status).toBe(200);
  expect(response.body.aggregations.per_year.buckets.length).toBeGreaterThan(1);
});
