import { startApi, type TestApi } from '../support/harness';
import { tenantWithClient, type KbClient } from '../integration/kb/kb-client';
import { services } from './support';

/**
 * Deleting a collection spans Postgres (the row) and Elasticsearch (its documents). With
 * Elasticsearch down the delete must fail without removing the row, so the documents are
 * never orphaned and the client can simply delete again once it is back.
 */
let api: TestApi;
let kb: KbClient;
beforeAll(async () => {
  api = await startApi();
  ({ kb } = await tenantWithClient(api));
});
afterAll(async () => {
  services('start', 'elasticsearch'); // always leave the shared service running
  await api.close();
});

test('DELETE with Elasticsearch down fails and keeps the collection; repeated once it is back, it removes everything', async () => {
  const id = await kb.newCollection();
  await kb.index(id, [{ id: 'a', content: 'alpha' }, { id: 'b', content: 'beta' }]);

  services('stop', 'elasticsearch');
  const failed = await kb.call('DELETE', `/${id}`);
  expect(failed.status).toBeGreaterThanOrEqual(500);
  expect((await kb.call('GET', `/${id}`)).status).toBe(200);

  services('start', 'elasticsearch');
  const deleted = await kb.call('DELETE', `/${id}`);
  expect(deleted.status).toBe(200);
  expect(deleted.body).toMatchObject({ id, deleted: true, deleted_documents: 2 });
  expect((await kb.call('GET', `/${id}`)).status).toBe(404);
});
