import { createKnowledgeBaseTool } from '../../../activities/knowledge-base-tools';
import { closeDeps, createDeps } from '../../../src/deps';
import { createLogger } from '../../../src/logger';
import { startApi, type TestApi } from '../../support/harness';
import { testConfig } from '../../support/config';
import { bearer, createTenant, json, type Tenant } from '../../support/factories';

/**
 * Elasticsearch unreachable while a run's knowledge-base tool is called: the tool answers the
 * model with a retryable `unavailable` error (it may try again or answer without it); the run
 * used to fail as `internal_error` once the activity's retries ran out.
 */
let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db, { credits: 1n });
});
afterAll(() => api.close());

test('search and fetch answer a retryable `unavailable` tool error', async () => {
  const created = await fetch(`${api.url}/v1/kb/collections`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify({ project_id: tenant.projectId, name: `outage ${Date.now()}` }) });
  expect(created.status).toBe(201);
  const collectionId = (await json(created)).id as string;
  const unreachable = createDeps(testConfig({ ELASTICSEARCH_URL: 'http://127.0.0.1:1' }), createLogger({ level: 'silent' }));
  try {
    const tool = createKnowledgeBaseTool(unreachable);
    for (const [kind, input] of [['kb_search', { query: 'refunds' }], ['kb_fetch', { id: 'a' }]] as const) {
      const answer = await tool({ projectId: tenant.projectId, kind, entry: { collection_id: collectionId }, input });
      expect(answer).toMatchObject({ is_error: true, error_code: 'unavailable' });
      expect(JSON.parse(answer.content)).toMatchObject({ error: { code: 'unavailable', retryable: true } });
    }
  } finally {
    await closeDeps(unreachable);
  }
});
