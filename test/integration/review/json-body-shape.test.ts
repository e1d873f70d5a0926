import { startApi, type TestApi } from '../../support/harness';
import { startTestSimulator, type Simulator } from '../../support/simulator';
import { createSession, tenantWithAgent } from '../sessions/support';
import { platformUserWithAccount, startPlatform } from '../../support/platform';
import { uniqueId } from '../../support/config';
import { bearer, createServiceToken, json, type Tenant } from '../../support/factories';

/**
 * JSON that parses but that no consumer can take: an unpaired UTF-16 surrogate escape (jsonb
 * refuses it, a text column stores U+FFFD instead) and nesting thousands of levels deep
 * (recursive consumers overflow the stack). Both used to answer 500, or silently alter the
 * value; they are bad input: 400 in the endpoint's envelope, naming where, nothing written.
 */
let api: TestApi;
let tenant: Tenant;
let sessionId: string;
// (A provider for the calls that pass: nothing listens at the default SIMULATOR_URL in CI.)
let sim: Simulator;
beforeAll(async () => {
  sim = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: sim.url });
  const created = await tenantWithAgent(api);
  tenant = created.tenant;
  sessionId = (await createSession(created.client, created.agent.id)).id;
});
afterAll(async () => {
  await api.close();
  await sim.close();
});

// Bodies are written as JSON text: JSON.stringify would escape a lone surrogate the same way,
// but writing it out keeps the test's input visible.
const post = (path: string, body: unknown, headers: Record<string, string> = bearer(tenant.key)) =>
  fetch(`${api.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

async function expect400(response: Response, message: RegExp): Promise<void> {
  expect(response.status).toBe(400);
  const body = await json(response);
  expect(body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: 400, request_id: expect.any(String) } });
  expect(body.error.message).toMatch(message);
}

describe('unpaired surrogates: 400 naming the field, nothing written', () => {
  test('agent metadata (jsonb) and name (text)', async () => {
    const name = uniqueId('surrogate-');
    await expect400(await post('/v1/agents', `{"project_id":"${tenant.projectId}","name":"${name}","model":"openai/gpt-4o","metadata":{"k":"x\\ud800"}}`), /metadata\.k contains an unpaired UTF-16 surrogate/);
    await expect400(await post('/v1/agents', `{"project_id":"${tenant.projectId}","name":"${name}\\udfff","model":"openai/gpt-4o"}`), /^name contains an unpaired/);
    const { rows } = await api.deps.db.query('SELECT 1 FROM agents WHERE project_id = $1 AND name LIKE $2', [tenant.projectId, `${name}%`]);
    expect(rows).toHaveLength(0);
  });

  test('a user.message: no event appended, no run started', async () => {
    const body = '{"events":[{"type":"user.message","content":[{"type":"text","text":"x\\ud800"}]}]}';
    await expect400(await post(`/v1/sessions/${sessionId}/events`, body), /events\.0\.content\.0\.text/);
    const { rows } = await api.deps.db.query('SELECT count(*)::int AS n FROM session_events WHERE session_id = $1', [sessionId]);
    expect(rows[0].n).toBe(0);
  });

  test('site registration', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId, uniqueId('client-surrogate-'));
    await expect400(await post('/v1/sites', '{"site_url":"https://surrogate.example.com","display_name":"x\\ud800"}', bearer(token)), /display_name/);
  });

  test('a surrogate pair is one character and round-trips', async () => {
    const agent = await json(await post('/v1/agents', `{"project_id":"${tenant.projectId}","name":"pair \\ud83d\\ude00","model":"openai/gpt-4o","metadata":{"k":"\\ud83d\\ude00"}}`));
    expect(agent.name).toBe('pair 😀');
    expect(agent.metadata).toEqual({ k: '😀' });
  });
});

test('a __proto__ key (which object copies would drop silently, widening a filter) is 400 naming where', async () => {
  const body = `{"project_id":"${tenant.projectId}","name":"proto","model":"openai/gpt-4o","tools":[{"type":"knowledge_base","name":"kb","collection_id":"kbc_x","filters":{"metadata":{"__proto__":["public"]}}}]}`;
  await expect400(await post('/v1/agents', body), /tools\.0\.filters\.metadata has a key named __proto__/);
});

describe('nesting deeper than 128 levels: 400 before any handler, size check or database', () => {
  test('agent settings (the size check used to overflow the stack)', async () => {
    const body = `{"project_id":"${tenant.projectId}","name":"deep","model":"openai/gpt-4o","settings":{"k":${deep(5000)}}}`;
    await expect400(await post('/v1/agents', body), /deeper than 128 levels \(under settings\.k\.0\.0…\)/);
  });

  test('chat completions provider_options', async () => {
    const body = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"provider_options":{"k":${deep(10000)}}}`;
    await expect400(await post('/v1/chat/completions', body), /deeper than 128 levels/);
  });

  test('POST /v1/messages answers in the native envelope', async () => {
    const body = `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"k":${deep(10000)}}}`;
    const response = await post('/v1/messages', body, { 'x-api-key': tenant.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/deeper than 128 levels/), request_id: expect.any(String) } });
  });

  test('128 levels are accepted', async () => {
    // The body object and `settings` are two levels; the value takes the other 126.
    const body = `{"project_id":"${tenant.projectId}","name":"deep-ok","model":"openai/gpt-4o","settings":{"k":${deep(126)}}}`;
    const response = await post('/v1/agents', body);
    expect(response.status).toBe(201);
  });
});

describe('bytes that are not UTF-8: 400, never replaced', () => {
  const latin1 = (text: string) => Buffer.from(text, 'latin1');
  test('a body with invalid UTF-8 is refused; two ids differing only in such bytes do not become one', async () => {
    const collection = await json(await post('/v1/kb/collections', { project_id: tenant.projectId, name: uniqueId('utf8-') }));
    const bulk = (body: Buffer) => fetch(`${api.url}/v1/kb/collections/${collection.id}/documents/bulk`, { method: 'POST', headers: bearer(tenant.key), body });
    await expect400(await bulk(latin1('{"documents":[{"id":"u-\xff","content":"first"},{"id":"u-\xfe","content":"second"}]}')), /request body is not valid UTF-8/);
    const name = uniqueId('latin1-');
    await expect400(await fetch(`${api.url}/v1/agents`, { method: 'POST', headers: bearer(tenant.key), body: latin1(`{"project_id":"${tenant.projectId}","name":"${name}\xe9","model":"openai/gpt-4o"}`) }), /not valid UTF-8/);
    expect((await api.deps.db.query('SELECT 1 FROM agents WHERE name LIKE $1', [`${name}%`])).rowCount).toBe(0);
    // Valid multi-byte UTF-8 is of course fine.
    expect((await bulk(Buffer.from('{"documents":[{"id":"u-é","content":"fine"}]}', 'utf8'))).status).toBe(200);
  });
});

describe('numbers a double cannot carry: 400 naming where, nothing written', () => {
  test('1e400 (Infinity, which would be stored as null) in a tool schema; an inexact integer in metadata', async () => {
    const name = uniqueId('numbers-');
    const agent = (schemaMaximum: string) =>
      post('/v1/agents', `{"project_id":"${tenant.projectId}","name":"${name}","model":"openai/gpt-4o","tools":[{"type":"custom","name":"f","input_schema":{"type":"object","properties":{"n":{"type":"number","maximum":${schemaMaximum}}}}}]}`);
    await expect400(await agent('1e400'), /^tools\.0\.input_schema\.properties\.n\.maximum is a number too large to carry/);
    await expect400(await agent('-1e400'), /maximum is a number too large/);
    expect((await api.deps.db.query('SELECT 1 FROM agents WHERE name = $1', [name])).rowCount).toBe(0);
    await expect400(
      await post('/v1/kb/collections', `{"project_id":"${tenant.projectId}","name":"${name}","metadata":{"post_id":9007199254740993}}`),
      /^metadata\.post_id: the integer 9007199254740993 is beyond what a JSON number carries exactly here .*send it as a string$/,
    );
    // Integers a double holds exactly are kept as written.
    const created = await post('/v1/kb/collections', `{"project_id":"${tenant.projectId}","name":"${name}","metadata":{"post_id":9007199254740992,"big":100000000000000000000}}`);
    expect(created.status).toBe(201);
    expect((await json(created)).metadata).toEqual({ post_id: 9007199254740992, big: 1e20 });
  });

  test('chat completions: refused before anything goes upstream, in the native envelope on /v1/messages', async () => {
    await expect400(await post('/v1/chat/completions', '{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"number","maximum":1e999}}}}'), /response_format\.json_schema\.schema\.maximum is a number too large/);
    // Inside a tool call's arguments (JSON in a string, parsed for providers that take objects).
    const call = (args: string) =>
      post('/v1/chat/completions', {
        model: 'anthropic/claude-haiku-4-5',
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'done' },
        ],
      });
    await expect400(await call('{"n":[1e400]}'), /^messages\.1\.tool_calls\.0\.function\.arguments: the arguments: n\.0 is a number too large to carry/);
    expect((await call('{"n":[1e300]}')).status).toBe(200);
    const native = await post('/v1/messages', '{"model":"claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{"n":{"const":12345678901234567891}}}}]}', { ...bearer(tenant.key), 'anthropic-version': '2023-06-01' });
    expect(native.status).toBe(400);
    expect((await json(native)).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/the integer 12345678901234567891 /) });
  });
});

test('a query parameter that is not UTF-8 once percent-decoded is 400 naming it, never read as U+FFFD', async () => {
  const list = (query: string) => fetch(`${api.url}/v1/sessions?project_id=${tenant.projectId}&${query}`, { headers: bearer(tenant.key) });
  await expect400(await list('metadata_key=k%FF&metadata_value=v'), /^query parameter "metadata_key" is not valid UTF-8 once percent-decoded$/);
  await expect400(await list('metadata_key=k&metadata_value=%ED%A0%80'), /"metadata_value" is not valid UTF-8/);
  await expect400(await fetch(`${api.url}/v1/sessions/${sessionId}/events?after_id=%C3`, { headers: bearer(tenant.key) }), /"after_id" is not valid UTF-8/);
  // Percent-encoded UTF-8 is read as such.
  expect((await list('metadata_key=caf%C3%A9&metadata_value=%E2%82%AC')).status).toBe(200);
});

describe('platform API', () => {
  let platform: Awaited<ReturnType<typeof startPlatform>>;
  beforeAll(async () => {
    platform = await startPlatform(api.deps.db);
  });
  afterAll(() => platform.close());

  test('an environment variable with a lone surrogate, or a deep body: 400 naming the field, nothing created', async () => {
    const { headers, accountId } = await platformUserWithAccount(api.deps.db, 'platform-json-');
    const apps = `${platform.url}/v1/accounts/${accountId}/apps`;
    const app = await json(await fetch(apps, { method: 'POST', headers, body: JSON.stringify({ name: 'ok' }) }));

    const bad = await fetch(`${apps}/${app.id}/environments`, { method: 'POST', headers, body: '{"name":"prod","variables":{"A":"x\\ud800"}}' });
    expect(bad.status).toBe(400);
    expect((await json(bad)).errors).toEqual([{ resource: 'request', field: 'variables.A', type: 'invalid_value', message: expect.stringMatching(/surrogate/) }]);
    const tooDeep = await fetch(apps, { method: 'POST', headers, body: `{"name":"x","extra":${deep(3000)}}` });
    expect(tooDeep.status).toBe(400);
    expect((await json(await fetch(`${apps}/${app.id}/environments`, { headers }))).results).toEqual([]);
    const latin1 = await fetch(apps, { method: 'POST', headers, body: Buffer.from('{"name":"caf\xe9"}', 'latin1') });
    expect(latin1.status).toBe(400);
    expect((await json(latin1)).errors[0].message).toMatch(/not valid UTF-8/);
    const query = await fetch(`${apps}?page_size=1&name=caf%E9`, { headers });
    expect(query.status).toBe(400);
    expect((await json(query)).errors).toEqual([{ resource: 'request', field: 'name', type: 'invalid_value', message: 'query parameter "name" is not valid UTF-8 once percent-decoded' }]);
  });
});
