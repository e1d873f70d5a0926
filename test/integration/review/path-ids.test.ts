import { startApi, type TestApi } from '../../support/harness';
import { bearer, createTenant, json, type Tenant } from '../../support/factories';

let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
});
afterAll(() => api.close());

const get = (path: string) => fetch(`${api.url}${path}`, { headers: bearer(tenant.key) });

test.each([
  ['/v1/agents/', 'agent'],
  ['/v1/sessions/', 'session'],
  ['/v1/sessions/%s/events', 'session'],
  ['/v1/kb/collections/', 'collection'],
])('a path id that cannot be an id answers exactly like an absent one: %s', async (template, what) => {
  const path = (id: string) => (template.includes('%s') ? template.replace('%s', id) : `${template}${id}`);
  const absent = await get(path('absent_0000000000000000000000'));
  const malformed = await get(path(encodeURIComponent('bad id\u0001') ));
  const tooLong = await get(path('x'.repeat(200)));
  expect(absent.status).toBe(404);
  const expected = (await json(absent)).error.message;
  for (const response of [malformed, tooLong]) {
    expect(response.status).toBe(404);
    const body = await json(response);
    expect(body.error).toMatchObject({ type: 'not_found_error', code: 404, message: expected });
  }
  expect(expected).toBe(`${what} not found`);
});
