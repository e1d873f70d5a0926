import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startApi, type TestApi } from '../../support/harness';
import { testConfig } from '../../support/config';
import { createServiceToken, createTenant } from '../../support/factories';
import { newId } from '../../../src/store/ids';
import { generateServiceToken } from '../../../src/auth/tokens';
import { hashSecret } from '../../../src/auth/api-keys';
import { apiClient, createAgent, createSession, setRunState, tenantWithAgent, toolResult, userMessage, type ApiClient } from './support';
import { signalsSent, terminateWorkflows } from './temporal-history';

let api: TestApi;
const started: string[] = [];
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '5000' });
});
afterAll(async () => {
  await terminateWorkflows(api, started);
  await api.close();
});

async function freshSession(extra: Record<string, unknown> = {}) {
  const { client, agent, tenant } = await tenantWithAgent(api);
  const session = await createSession(client, agent.id, extra);
  started.push(session.id);
  return { client, agent, tenant, session };
}
const post = (client: ApiClient, sessionId: string, events: unknown[]) => client.post(`/v1/sessions/${sessionId}/events`, { events });
const runState = async (sessionId: string) =>
  (await api.deps.db.query('SELECT status, active_run_id, pending_tool_use_ids, cancelled_tool_use_ids FROM sessions WHERE id = $1', [sessionId])).rows[0];
const allEvents = async (client: ApiClient, sessionId: string) => (await client.get(`/v1/sessions/${sessionId}/events?limit=100`)).body.data;

describe('user.message on an idle session', () => {
  test('is persisted and echoed with its id, claims a run, and signals the workflow exactly once', async () => {
    const { client, session } = await freshSession();
    const reply = await post(client, session.id, [userMessage('hello')]);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toHaveLength(1);
    const event = reply.body.data[0];
    expect(event).toEqual({ id: expect.stringMatching(/^evt_/), type: 'user.message', content: [{ type: 'text', text: 'hello' }], processed_at: null, created_at: expect.any(String) });
    const state = await runState(session.id);
    expect(state.status).toBe('running');
    expect(state.active_run_id).toMatch(/^run_/);
    expect(await signalsSent(api, session.id)).toEqual([{ name: 'eventsAppended', args: [null] }]);
    expect((await client.get(`/v1/sessions/${session.id}`)).body.status).toBe('running');
  });

  test('a second message while the run is in flight is stored unprocessed, keeps the run, and signals once more', async () => {
    const { client, session } = await freshSession();
    await post(client, session.id, [userMessage('one')]);
    const runId = (await runState(session.id)).active_run_id;
    const reply = await post(client, session.id, [userMessage('two'), { type: 'system.message', content: [{ type: 'text', text: 'note' }] }]);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((e: { type: string }) => e.type)).toEqual(['user.message', 'system.message']);
    expect((await runState(session.id)).active_run_id).toBe(runId);
    expect(await signalsSent(api, session.id)).toHaveLength(2);
  });

  test('a system.message alone starts nothing and sends no signal', async () => {
    const { client, session } = await freshSession();
    const reply = await post(client, session.id, [{ type: 'system.message', content: [{ type: 'text', text: 'context' }] }]);
    expect(reply.status).toBe(200);
    expect(await runState(session.id)).toMatchObject({ status: 'idle', active_run_id: null });
    expect(await signalsSent(api, session.id)).toEqual([]);
  });

  test('document blocks are accepted in messages', async () => {
    const { client, session } = await freshSession();
    const document = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'body' }, title: 'Doc' };
    const reply = await post(client, session.id, [{ type: 'system.message', content: [document, { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }] }]);
    expect(reply.status).toBe(200);
    expect(reply.body.data[0].content[0]).toEqual(document);
  });

  test('a media type may carry parameters (a text file its charset), kept as sent', async () => {
    const { client, session } = await freshSession();
    const document = { type: 'document', source: { type: 'base64', media_type: 'text/plain; charset=ISO-8859-1', data: Buffer.from('café', 'latin1').toString('base64') } };
    const reply = await post(client, session.id, [{ type: 'system.message', content: [document] }]);
    expect(reply.status).toBe(200);
    expect(reply.body.data[0].content[0]).toEqual(document);
  });
});

describe('request validation (400)', () => {
  let client: ApiClient;
  let sessionId: string;
  beforeAll(async () => {
    const fresh = await freshSession();
    client = fresh.client;
    sessionId = fresh.session.id;
  });
  const expect400 = async (events: unknown, message: RegExp) => {
    const reply = await client.post(`/v1/sessions/${sessionId}/events`, events === undefined ? {} : { events });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(message);
  };

  test.each(['user.tool_confirmation', 'user.custom_tool_result', 'user.define_outcome'])('%s is rejected by name', async (type) => {
    await expect400([{ type, content: [] }], new RegExp(`events\\.0\\.type: '${type.replace('.', '\\.')}' events are not supported`));
  });

  test('a base64 text file must be text in its charset (UTF-8 unless the media type names one)', async () => {
    const latin1 = Buffer.from('café naïve', 'latin1').toString('base64');
    const file = (mediaType: string) => [{ type: 'user.message', content: [{ type: 'document', source: { type: 'base64', media_type: mediaType, data: latin1 } }] }];
    await expect400(file('text/plain'), /events\.0\.content\.0\.source\.data: the text file is not valid UTF-8 text \(name its charset/);
    await expect400(file('text/plain; charset=klingon'), /charset "klingon" is not one the gateway reads/);
    await expect400(file('text/plain; charset'), /must be a media type/);
  });

  test('unknown types, agent-produced types, missing events, empty list', async () => {
    await expect400([{ type: 'user.shout', content: [] }], /events\.0\.type: must be one of/);
    await expect400([{ type: 'agent.message', content: [] }], /events\.0\.type/);
    await expect400(undefined, /events/);
    await expect400([], /at least one event/);
  });

  test('message content: text or document blocks only, at least one', async () => {
    await expect400([{ type: 'user.message', content: [{ type: 'image', source: {} }] }], /events\.0\.content\.0/);
    await expect400([{ type: 'user.message', content: [] }], /at least one block/);
    await expect400([{ type: 'user.message', content: 'hello' }], /events\.0\.content/);
    await expect400([{ type: 'user.message', content: [{ type: 'text' }] }], /events\.0\.content\.0\.text/);
  });

  test('base64 documents: standard base64 data and a media type, else 400 naming the field', async () => {
    const doc = (source: Record<string, unknown>) => [{ type: 'user.message', content: [{ type: 'document', source: { type: 'base64', ...source } }] }];
    await expect400(doc({ media_type: 'application/pdf', data: '%%%not-base64%%%' }), /events\.0\.content\.0\.source\.data: must be standard base64/);
    await expect400(doc({ media_type: 'application/pdf', data: 'abc' }), /source\.data: must be standard base64/);
    await expect400(doc({ media_type: 'banana', data: 'JVBERi0=' }), /events\.0\.content\.0\.source\.media_type: must be a media type/);
    const fine = await client.post(`/v1/sessions/${sessionId}/events`, { events: [{ type: 'system.message', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }] });
    expect(fine.status).toBe(200);
  });

  test('user.interrupt: alone in its request, content empty or omitted', async () => {
    await expect400([{ type: 'user.interrupt' }, userMessage()], /only event/);
    await expect400([{ type: 'user.interrupt', content: [{ type: 'text', text: 'stop' }] }], /empty or omitted/);
  });

  test('tool results and messages are never mixed', async () => {
    await expect400([toolResult('t1'), userMessage()], /either user\.tool_result events or messages/);
  });

  test('tool_result blocks: tool_use_id required, error_code from the enum and only with is_error true, envelope shape, traceparent format', async () => {
    const block = (extra: Record<string, unknown>) => [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 't1', ...extra }] }];
    await expect400([{ type: 'user.tool_result', content: [{ type: 'tool_result' }] }], /tool_use_id: is required/);
    await expect400([{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 'x'.repeat(257) }] }], /tool_use_id: must be at most 256 characters/);
    await expect400(block({ is_error: true, error_code: 'exploded' }), /error_code: must be one of/);
    await expect400(block({ error_code: 'timeout' }), /error_code is allowed only when is_error is true/);
    await expect400(block({ is_error: false, error_code: 'timeout' }), /error_code is allowed only when is_error is true/);
    await expect400(block({ content: { message: 'no envelope' } }), /content/);
    await expect400(block({ content: { error: { code: 'x', message: 'm' } } }), /content/);
    await expect400(block({ traceparent: 'not-a-traceparent' }), /traceparent/);
    await expect400(block({ client_timing: { started_at_ms: 10, ended_at_ms: 5 } }), /ended_at_ms/);
    await expect400(block({ status: 'tool_loaded' }), /status/);
    await expect400([{ type: 'user.tool_result', content: [{ type: 'text', text: 'x' }] }], /tool_result/);
  });
});

describe('client tool pauses', () => {
  test('message while paused with a run in flight: 400 and nothing appended', async () => {
    const { client, session } = await freshSession();
    await setRunState(api, session.id, { active_run_id: 'run_a', pending: ['tu_1'] });
    const reply = await post(client, session.id, [userMessage()]);
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(/send the tool result first/);
    const system = await post(client, session.id, [{ type: 'system.message', content: [{ type: 'text', text: 'x' }] }]);
    expect(system.status).toBe(400);
    expect(await allEvents(client, session.id)).toEqual([]);
  });

  test('message with a pause outstanding and no run: a synthetic cancelled result per call, then the message', async () => {
    const { client, session } = await freshSession();
    await setRunState(api, session.id, { active_run_id: null, pending: ['tu_1', 'tu_2'] });
    const reply = await post(client, session.id, [userMessage('new topic')]);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((e: { type: string }) => e.type)).toEqual(['user.message']);
    const log = await allEvents(client, session.id);
    expect(log.map((e: { type: string }) => e.type)).toEqual(['user.tool_result', 'user.tool_result', 'user.message']);
    for (const [i, id] of ['tu_1', 'tu_2'].entries()) {
      expect(log[i]).toMatchObject({ error_code: 'cancelled', processed_at: expect.any(String) });
      const block = log[i].content[0];
      expect(block).toMatchObject({ type: 'tool_result', tool_use_id: id, is_error: true, error_code: 'cancelled' });
      expect(JSON.parse(block.content)).toEqual({ error: { code: 'cancelled', message: expect.any(String), retryable: false } });
    }
    expect(await runState(session.id)).toMatchObject({ pending_tool_use_ids: [], cancelled_tool_use_ids: ['tu_1', 'tu_2'], status: 'running' });

    // A late result for a cancelled call is a conflict.
    const late = await post(client, session.id, [toolResult('tu_1')]);
    expect(late.status).toBe(409);
    expect(late.body.error.type).toBe('conflict_error');
  });

  test('tool results: each pending id resumes once; unknown ids are 400; nothing is applied from a failing request', async () => {
    const { client, session } = await freshSession();
    await setRunState(api, session.id, { active_run_id: 'run_b', pending: ['tu_1', 'tu_2'], status: 'idle' });
    const unknown = await post(client, session.id, [toolResult('tu_1'), toolResult('tu_9')]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/tu_9/);
    expect((await runState(session.id)).pending_tool_use_ids).toEqual(['tu_1', 'tu_2']);

    const first = await post(client, session.id, [toolResult('tu_1')]);
    expect(first.status).toBe(200);
    expect((await runState(session.id)).pending_tool_use_ids).toEqual(['tu_2']);
    expect((await post(client, session.id, [toolResult('tu_1')])).status).toBe(400);
    const second = await post(client, session.id, [toolResult('tu_2')]);
    expect(second.status).toBe(200);
    expect((await runState(session.id)).pending_tool_use_ids).toEqual([]);
    expect(second.body.data[0].processed_at).toBeNull();
    // One signal per accepted request, none for the refused ones.
    expect(await signalsSent(api, session.id)).toEqual([
      { name: 'eventsAppended', args: [null] },
      { name: 'eventsAppended', args: [null] },
    ]);
  });

  test('event-level error_code: first failing block, unclassified without a code, absent on success; traceparent never returned', async () => {
    const { client, session } = await freshSession();
    await setRunState(api, session.id, { active_run_id: 'run_c', pending: ['a', 'b', 'c', 'd', 'e'] });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const envelope = { error: { code: 'timeout', message: 'too slow', field: 'city', retryable: true } };
    const reply = await post(client, session.id, [
      {
        type: 'user.tool_result',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'fine', traceparent, client_timing: { started_at_ms: 1, ended_at_ms: 2 } },
          { type: 'tool_result', tool_use_id: 'b', is_error: true, error_code: 'timeout', content: envelope },
          { type: 'tool_result', tool_use_id: 'c', is_error: true, error_code: 'declined' },
        ],
      },
      { type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 'd', is_error: true }] },
      { type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 'e', content: 'ok' }] },
    ]);
    expect(reply.status).toBe(200);
    const [mixed, uncoded, fine] = reply.body.data;
    expect(mixed.error_code).toBe('timeout');
    expect(uncoded.error_code).toBe('unclassified');
    expect(fine).not.toHaveProperty('error_code');
    expect(mixed.content[0]).toEqual({ type: 'tool_result', tool_use_id: 'a', content: 'fine', is_error: false, client_timing: { started_at_ms: 1, ended_at_ms: 2 } });
    expect(mixed.content[1].content).toEqual(envelope);
    expect(JSON.stringify(await allEvents(client, session.id))).not.toContain(traceparent);
    // Stored for the runtime, which echoes it on its trace.
    const { rows } = await api.deps.db.query(`SELECT content FROM session_events WHERE id = $1`, [mixed.id]);
    expect(rows[0].content[0].traceparent).toBe(traceparent);
  });

  test('a failed result read back from the history (error_code unclassified) is accepted as it is', async () => {
    const { client, session } = await freshSession();
    await setRunState(api, session.id, { active_run_id: 'run_u', pending: ['u1', 'u2'] });
    const first = await post(client, session.id, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 'u1', is_error: true }] }]);
    const echoed = first.body.data[0].content[0];
    expect(echoed).toMatchObject({ is_error: true, error_code: 'unclassified' });
    const again = await post(client, session.id, [{ type: 'user.tool_result', content: [{ ...echoed, tool_use_id: 'u2' }] }]);
    expect(again.status).toBe(200);
    expect(again.body.data[0]).toMatchObject({ error_code: 'unclassified', content: [{ tool_use_id: 'u2', error_code: 'unclassified' }] });
  });
});

describe('user.interrupt', () => {
  test('with no run in flight: appended, nothing else happens, no signal', async () => {
    const { client, session } = await freshSession();
    const reply = await post(client, session.id, [{ type: 'user.interrupt' }]);
    expect(reply.status).toBe(200);
    expect(reply.body.data[0]).toMatchObject({ type: 'user.interrupt', content: [] });
    expect(await runState(session.id)).toMatchObject({ status: 'idle', active_run_id: null });
    expect(await signalsSent(api, session.id)).toEqual([]);
    expect((await post(client, session.id, [{ type: 'user.interrupt', content: [] }])).status).toBe(200);
  });

  test('with a run in flight: asks exactly that run to stop', async () => {
    const { client, session } = await freshSession();
    await post(client, session.id, [userMessage()]);
    const runId = (await runState(session.id)).active_run_id;
    const reply = await post(client, session.id, [{ type: 'user.interrupt' }]);
    expect(reply.status).toBe(200);
    const signals = await signalsSent(api, session.id);
    expect(signals).toEqual([
      { name: 'eventsAppended', args: [null] },
      { name: 'interrupt', args: [runId] },
    ]);
  });
});

describe('credits, signal failure, the site switch', () => {
  test('credits exhausted: run-starting requests get the credit-exhausted response and append nothing', async () => {
    const poor = await createTenant(api.deps.db, { credits: 0n });
    const client = apiClient(api, poor.key);
    const agent = await createAgent(client, poor.projectId);
    const session = await createSession(client, agent.id);
    const reply = await post(client, session.id, [userMessage()]);
    expect(reply.status).toBe(402);
    expect(reply.body.error.type).toBe('insufficient_credits');
    await setRunState(api, session.id, { active_run_id: 'run_p', pending: ['t'] });
    expect((await post(client, session.id, [toolResult('t')])).status).toBe(402);
    expect(await allEvents(client, session.id)).toEqual([]);
    // Interrupts never cost anything.
    expect((await post(client, session.id, [{ type: 'user.interrupt' }])).status).toBe(200);
  });

  test('Temporal unreachable: the request still succeeds and the event stays unprocessed for the reconciler', async () => {
    const broken = await startApi({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
    try {
      const { tenant } = await tenantWithAgent(api);
      const client = apiClient(broken, tenant.key);
      const agent = await createAgent(client, tenant.projectId);
      const session = await createSession(client, agent.id);
      const reply = await post(client, session.id, [userMessage()]);
      expect(reply.status).toBe(200);
      const { rows } = await api.deps.db.query('SELECT processed_at FROM session_events WHERE id = $1', [reply.body.data[0].id]);
      expect(rows[0].processed_at).toBeNull();
      expect((await runState(session.id)).status).toBe('running');
      expect(broken.logs.some((line) => line.includes('session signal failed after commit'))).toBe(true);
    } finally {
      await broken.close();
    }
  });

  test('a site with asynchronous execution disabled: events are stored and echoed, no run starts, no signal', async () => {
    const { tenant, agent } = await tenantWithAgent(api);
    const clientId = newId('client');
    const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId, clientId));
    const registered = await site.post('/v1/sites', { site_url: `https://${clientId.toLowerCase()}.example.com`, project_id: tenant.projectId });
    expect(registered.status).toBe(201);
    const siteId = registered.body.site_id as string;
    await api.deps.db.query('UPDATE sites SET async_execution_enabled = false WHERE site_id = $1', [siteId]);
    // Another account's token under the same client id (issued before client ids were bound to
    // one account) is not governed by this site's switch.
    const other = await tenantWithAgent(api);
    const legacyToken = generateServiceToken();
    await api.deps.db.query(`INSERT INTO service_tokens (id, account_id, client_id, token_hash) VALUES ($1, $2, $3, $4)`, [
      newId('stok'),
      other.tenant.accountId,
      clientId,
      hashSecret(legacyToken),
    ]);
    const legacy = apiClient(api, legacyToken);
    const theirs = await createSession(legacy, other.agent.id);
    started.push(theirs.id);
    expect((await post(legacy, theirs.id, [userMessage()])).status).toBe(200);
    expect((await runState(theirs.id)).status).toBe('running');

    const session = await createSession(site, agent.id);
    started.push(session.id);
    const reply = await post(site, session.id, [userMessage()]);
    expect(reply.status).toBe(200);
    expect(reply.body.data[0].type).toBe('user.message');
    expect(await runState(session.id)).toMatchObject({ status: 'idle', active_run_id: null });
    expect(await signalsSent(api, session.id)).toEqual([]);

    // The console switches it back on (admin CLI).
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', 'site', 'async-execution', '--id', siteId, '--enabled', 'true'], {
      env: { ...process.env, DATABASE_URL: testConfig().DATABASE_URL },
    });
    expect(JSON.parse(stdout)).toEqual({ site_id: siteId, async_execution_enabled: true });
    expect((await post(site, session.id, [userMessage()])).status).toBe(200);
    expect((await runState(session.id)).status).toBe('running');
    expect(await signalsSent(api, session.id)).toHaveLength(1);
  });
});

describe('callers', () => {
  test('another project: 404 like an absent session', async () => {
    const { session } = await freshSession();
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    const foreign = await post(outsider, session.id, [userMessage()]);
    const absent = await post(outsider, 'sesn_absent', [userMessage()]);
    expect(foreign.status).toBe(404);
    expect({ ...foreign.body.error, request_id: '' }).toEqual({ ...absent.body.error, request_id: '' });
  });
});
