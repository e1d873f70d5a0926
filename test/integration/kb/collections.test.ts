import { createKey, createServiceToken, createSiblingProject, type Tenant } from '../../support/factories';
import { startApi, type TestApi } from '../../support/harness';
import { getSitePrimaryCollectionId } from '../../../src/store/collections';
import { kbClient, tenantWithClient, type KbClient } from './kb-client';

let api: TestApi;
let tenant: Tenant;
let kb: KbClient;
beforeAll(async () => {
  api = await startApi();
  ({ tenant, kb } = await tenantWithClient(api));
});
afterAll(async () => {
  await api.close();
});

const unique = (label: string) => `${label} ${Math.random().toString(36).slice(2)}`;

async function expect400(body: unknown, fragment: string) {
  const response = await kb.createCollection(body);
  expect(response.status).toBe(400);
  expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 400 });
  expect(response.body.error.message).toContain(fragment);
}

describe('POST /v1/kb/collections', () => {
  test('creates a collection scoped to the key project; metadata omitted when unset', async () => {
    const name = unique('Docs');
    const response = await kb.createCollection({ name, description: 'legacy text' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^kbc_[0-9A-Za-z]{22}$/),
      type: 'kb_collection',
      project_id: tenant.projectId,
      name,
      description: 'legacy text',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(response.body).not.toHaveProperty('metadata');
    expect(new Date(response.body.created_at).toISOString()).toBe(response.body.created_at);
  });

  test('metadata: any object up to 64 KB round-trips', async () => {
    const metadata = { plugin: { version: '1.2' }, list: [1, 2, 3], pad: 'x'.repeat(60_000) };
    const response = await kb.createCollection({ name: unique('meta'), metadata });
    expect(response.status).toBe(201);
    expect(response.body.metadata).toEqual(metadata);
  });

  test('name rules: required, non-empty after trimming, <= 255 chars, no control characters', async () => {
    await expect400({}, 'name');
    await expect400({ name: 42 }, 'name');
    await expect400({ name: '   ' }, 'name: must not be empty');
    await expect400({ name: 'a'.repeat(256) }, 'name: must be at most 255 characters');
    await expect400({ name: 'bad\u0007name' }, 'name: must not contain control characters');
    await expect400({ name: 'tab\tname' }, 'control characters');
    await expect400({ name: 'trailing newline\n' }, 'control characters');
    // 255 characters (astral code points count once) are fine, and the name is stored trimmed.
    const longest = '😀'.repeat(5) + 'b'.repeat(250);
    const ok = await kb.createCollection({ name: `  ${longest}  ` });
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe(longest);
  });

  test('metadata must be an object of at most 64 KB', async () => {
    for (const metadata of [[], 'text', 12, true, null]) await expect400({ name: unique('m'), metadata }, 'metadata: must be a JSON object');
    await expect400({ name: unique('m'), metadata: { pad: 'x'.repeat(65_536) } }, 'metadata: must be at most 65536 bytes');
  });

  test('unknown fields are refused', async () => {
    await expect400({ name: unique('u'), nmae: 'typo' }, 'nmae');
  });

  test('name unique within the project (409, also after trimming), free in another project', async () => {
    const name = unique('Dup');
    expect((await kb.createCollection({ name })).status).toBe(201);
    const again = await kb.createCollection({ name: ` ${name} ` });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ type: 'conflict_error', code: 409 });
    const other = await tenantWithClient(api);
    expect((await other.kb.createCollection({ name })).status).toBe(201);
  });

  test('set_primary with a site service token sets the site primary collection; an API key just creates', async () => {
    const clientId = `client-${Math.random().toString(36).slice(2)}`;
    const site = kbClient(api, await createServiceToken(api.deps.db, tenant.accountId, clientId));
    // A service token reaches every project of its account, so it names one.
    const missingProject = await site.createCollection({ name: unique('site'), set_primary: true });
    expect(missingProject.status).toBe(400);
    const created = await site.createCollection({ name: unique('site'), set_primary: true, project_id: tenant.projectId });
    expect(created.status).toBe(201);
    expect(await getSitePrimaryCollectionId(api.deps.db, clientId)).toBe(created.body.id);

    const withKey = await kb.createCollection({ name: unique('key'), set_primary: true });
    expect(withKey.status).toBe(201);
    expect(await getSitePrimaryCollectionId(api.deps.db, clientId)).toBe(created.body.id);
  });

  test('auth: 401 without a token, 403 for a read-only key, 403 for a project the key is not pinned to', async () => {
    const anonymous = await fetch(`${api.url}/v1/kb/collections`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"x"}' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    const readOnly = kbClient(api, (await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'read_only' })).key);
    expect((await readOnly.createCollection({ name: unique('ro') })).status).toBe(403);
    const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
    expect((await kb.createCollection({ name: unique('x'), project_id: sibling })).status).toBe(403);
  });
});

describe('list, get, update, delete', () => {
  test('list pages through the project collections only', async () => {
    const mine = await tenantWithClient(api);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push(await mine.kb.newCollection(`list ${i}`));
    await kb.newCollection(unique('not mine'));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await mine.kb.call('GET', `?limit=2${cursor ? `&after=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((c: { id: string }) => c.id));
      cursor = page.body.has_more ? page.body.next_cursor : undefined;
    } while (cursor);
    expect(seen).toEqual(created);
    expect((await mine.kb.call('GET', '?limit=101')).status).toBe(400);
    expect((await mine.kb.call('GET', '?after=garbage')).status).toBe(400);
  });

  test("another project's collection answers exactly like an absent one", async () => {
    const id = await kb.newCollection(unique('private'));
    const other = await tenantWithClient(api);
    const foreign = await other.kb.call('GET', `/${id}`);
    const absent = await other.kb.call('GET', '/kbc_doesnotexist0000000000');
    expect(foreign.status).toBe(404);
    const strip = (body: { error: { request_id: string } }) => ({ ...body, error: { ...body.error, request_id: 'x' } });
    expect(strip(foreign.body)).toEqual(strip(absent.body));
    for (const [method, path, body] of [
      ['PATCH', `/${id}`, { name: 'stolen' }],
      ['DELETE', `/${id}`, undefined],
      ['POST', `/${id}/search`, {}],
      ['POST', `/${id}/documents/bulk`, { documents: [{ content: 'x' }] }],
      ['GET', `/${id}/documents/anything`, undefined],
      ['DELETE', `/${id}/documents/anything`, undefined],
    ] as const) {
      const response = await other.kb.call(method, path, body);
      expect([method, path, response.status]).toEqual([method, path, 404]);
      expect(strip(response.body)).toEqual(strip(absent.body));
    }
    expect((await kb.call('GET', `/${id}`)).status).toBe(200);
  });

  test('PATCH updates name and metadata; null clears metadata; name conflicts are 409', async () => {
    const id = await kb.newCollection(unique('patch'));
    const taken = unique('taken');
    await kb.newCollection(taken);
    const updated = await kb.call('PATCH', `/${id}`, { name: ' renamed ', metadata: { a: 1 } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'renamed', metadata: { a: 1 } });
    const cleared = await kb.call('PATCH', `/${id}`, { metadata: null });
    expect(cleared.body).not.toHaveProperty('metadata');
    expect((await kb.call('PATCH', `/${id}`, { name: taken })).status).toBe(409);
    expect((await kb.call('PATCH', `/${id}`, {})).status).toBe(400);
    expect((await kb.call('PATCH', `/${id}`, { metadata: [1] })).status).toBe(400);
  });

  test('DELETE removes the collection and its documents from the index', async () => {
    const id = await kb.newCollection(unique('doomed'));
    await kb.index(id, [{ id: 'a', content: 'alpha' }, { id: 'b', content: 'beta' }]);
    const deleted = await kb.call('DELETE', `/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id, deleted: true, deleted_documents: 2 });
    expect((await kb.call('GET', `/${id}`)).status).toBe(404);
    const left = await api.deps.search.count({ index: 'test-kb-documents', query: { term: { collection_id: id } } });
    expect(left.count).toBe(0);
  });
});

test('Elasticsearch unreachable: search and bulk answer 503 with Retry-After; collections (Postgres) still work', async () => {
  const cut = await startApi({ ELASTICSEARCH_URL: 'http://127.0.0.1:1' });
  try {
    const client = kbClient(cut, tenant.key);
    const collection = await client.newCollection(unique('offline'));
    for (const response of [await client.search(collection, { query: 'anything' }), await client.bulk(collection, [{ content: 'x' }])]) {
      expect(response.status).toBe(503);
      expect(response.body.error.type).toBe('service_unavailable');
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  } finally {
    await cut.close();
  }
}, 60_000);
