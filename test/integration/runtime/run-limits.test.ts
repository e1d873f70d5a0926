import { startApi, type TestApi } from '../../support/harness';
import { startTestSimulator, type Simulator } from '../../support/simulator';
import { createTenant, type Tenant } from '../../support/factories';
import { getBalanceNano, grantCredits } from '../../../src/billing/credits';
import { createAgentAndSession, sendEvents, startTestWorker, text, waitForEvent, listEvents } from '../../support/runtime';
import { setBalanceNano } from '../../support/credits';
import { CREDITS_EXHAUSTED_MESSAGE } from '../../../src/domain/run';

/**
 * Stop reasons and failure codes that need their own limits: one turn per run, a short
 * run timer; and a second api + worker outside development with a short upstream timeout.
 */
let simulator: Simulator;
let api: TestApi;
let production: TestApi;
let timed: TestApi;
let workers: Array<Awaited<ReturnType<typeof startTestWorker>>> = [];
let tenant: Tenant;

beforeAll(async () => {
  simulator = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: simulator.url, RUN_MAX_ITERATIONS: '1', RUN_TIMEOUT_MS: '6000', UPSTREAM_TIMEOUT_MS: '30000' });
  production = await startApi({ ENVIRONMENT: 'staging', GATEWAY_SECRET: 'staging-secret-'.padEnd(48, 'x'), OPENAI_BASE_URL: `${simulator.url}/v1`, UPSTREAM_TIMEOUT_MS: '700' });
  timed = await startApi({ SIMULATOR_URL: simulator.url, RUN_TIMEOUT_MS: '5000' });
  workers = [await startTestWorker(api.deps), await startTestWorker(production.deps), await startTestWorker(timed.deps)];
  tenant = await createTenant(api.deps.db, { credits: 100n });
});
afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await api?.close();
  await production?.close();
  await timed?.close();
  await simulator?.close();
});

test('max_tokens: the per-turn cap truncates the reply', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { max_tokens: 5 });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tokens:50]] long answer please') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('max_tokens');
});

test("max_tokens as large as the model's window: the prompt keeps room and the cap sent is what it leaves", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4', max_tokens: 100000 });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('a short question for a big cap') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  const sent = simulator.requests.filter((r) => JSON.stringify(r.body).includes('a short question for a big cap'));
  expect(sent).toHaveLength(1);
  const cap = (sent[0]!.body as { max_tokens?: number; max_completion_tokens?: number });
  const maxTokens = cap.max_completion_tokens ?? cap.max_tokens!;
  expect(maxTokens).toBeGreaterThan(8000);
  expect(maxTokens).toBeLessThan(8192);
});

test('model_context_window_exceeded: the model stopped because its context window filled up', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'anthropic/claude-haiku-4-5' });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[context-window]] keep going') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('model_context_window_exceeded');
  expect(events.filter((e) => e.type === 'session.turn_usage')).toHaveLength(1);
});

test('max_iterations: the turn cap ends a run that keeps calling tools', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"again"}]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('max_iterations');
  expect(events.filter((e) => e.type === 'session.turn_usage')).toHaveLength(1);
  expect(events.find((e) => e.type === 'user.tool_result')!.content[0].content).toBe('again');
});

test("a resumed run that reaches the turn cap before any turn reports its latest turn's context_tokens", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'lookup', input_schema: { type: 'object' } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {}]]') }]);
  const { event: paused, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(paused.stop_reason).toBe('client_tool_use');
  const turn = events.find((e) => e.type === 'session.turn_usage')!.content[0];
  await sendEvents(api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: paused.tool_use_ids[0], content: 'found' }] }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event.stop_reason).toBe('max_iterations');
  expect(event.context_tokens).toBe(turn.total_tokens);
});

test('run_timeout: the per-run timer ends a run whose model call never returns', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[delay:20000]] hang') }]);
  const started = Date.now();
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.type).toBe('session.error');
  expect(event.error_code).toBe('run_timeout');
  expect(Date.now() - started).toBeLessThan(20_000); // the 6 s run timer, not the 30 s upstream timeout, ended it
});

describe('the run timer counts active time across a run\'s cycles (5 s here), never the pause between them', () => {
  async function pausedRun(message: string) {
    const session = await createAgentAndSession(timed.deps, tenant.projectId, { tools: [{ name: 'lookup', input_schema: { type: 'object' } }] });
    await sendEvents(timed.deps, session, [{ type: 'user.message', content: text(message) }]);
    const { event: paused } = await waitForEvent(timed.deps, session.sessionId, 'closing');
    expect(paused.stop_reason).toBe('client_tool_use');
    const resume = () => sendEvents(timed.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: paused.tool_use_ids[0], content: 'found' }] }]);
    return { session, resume };
  }

  test('3 s before the pause and 4 s after it: run_timeout, although each cycle alone is under 5 s', async () => {
    const { session, resume } = await pausedRun('[[tool:lookup {}]] [[delay:3000]] [[then-delay:4000]]');
    await resume();
    const { event } = await waitForEvent(timed.deps, session.sessionId, 'closing', 2);
    expect(event.error_code).toBe('run_timeout');
  });

  test('2 s, a 4 s pause, then 1 s: the run ends normally', async () => {
    const { session, resume } = await pausedRun('[[tool:lookup {}]] [[delay:2000]] [[then-delay:1000]]');
    await new Promise((r) => setTimeout(r, 4000));
    await resume();
    const { event } = await waitForEvent(timed.deps, session.sessionId, 'closing', 2);
    expect(event.stop_reason).toBe('end_turn');
  });
});

test('rate_limit_error: a 429 is retried with back-off, then reported', async () => {
  const session = await createAgentAndSession(production.deps, tenant.projectId);
  await sendEvents(production.deps, session, [{ type: 'user.message', content: text('[[error:429]] busy') }]);
  const { event } = await waitForEvent(production.deps, session.sessionId, 'closing', 1, 40_000);
  expect(event.error_code).toBe('rate_limit_error');
  expect(event.content[0].message).toMatch(/provider is rate limiting/);
  const attempts = simulator.requests.filter((r) => JSON.stringify(r.body).includes('[[error:429]] busy'));
  expect(attempts.length).toBe(4);
});

test('credits: a run stops before the model call its balance can no longer pay for, billed for the turns it made', async () => {
  // One nano-credit: enough for the api to accept the message; the first turn costs more.
  const poor = await createTenant(timed.deps.db, { credits: 0n });
  await grantCredits(timed.deps.db, poor.projectId, 1n);
  const session = await createAgentAndSession(timed.deps, poor.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(timed.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"loop"}]] [[repeat:20]] credits loop') }]);
  const { event, events } = await waitForEvent(timed.deps, session.sessionId, 'closing');
  expect(event).toMatchObject({ type: 'session.error', error_code: 'rate_limit_error' });
  expect(event.content[0]).toEqual({ type: 'error', code: 'rate_limit_error', message: expect.stringMatching(/credit balance is exhausted/) });
  const turns = events.filter((e) => e.type === 'session.turn_usage');
  expect(turns).toHaveLength(1);
  expect(simulator.requests.filter((r) => JSON.stringify(r.body).includes('credits loop'))).toHaveLength(1);
  expect(event.usage.credits_nano).toBe(turns[0]!.content[0].credits_nano);
  expect(await getBalanceNano(timed.deps.db, poor.projectId)).toBe(1n - BigInt(event.usage.credits_nano));
});

test('compaction: the oldest turns are summarized into session.compaction; originals stay in the log', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4' });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'alpha '.repeat(2500)}[[tokens:20]]`) }]);
  await waitForEvent(api.deps, session.sessionId, 'closing');
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'beta '.repeat(3000)}[[tokens:10]]`) }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event.stop_reason).toBe('end_turn');
  const types = events.map((e) => e.type);
  expect(types.filter((t) => t === 'session.compaction')).toHaveLength(1);
  expect(types.indexOf('session.compaction')).toBeGreaterThan(types.lastIndexOf('user.message'));
  expect(types.filter((t) => t === 'user.message')).toHaveLength(2); // originals retained
  expect(event.context_tokens).toBeLessThan(8192);
  // The summary call is billed with the run.
  const turn = events.filter((e) => e.type === 'session.turn_usage').at(-1)!.content[0];
  // After a compacting cycle context_tokens is the post-compaction estimate, not the next turn's tokens
  // (that turn also counts its reply).
  expect(event.context_tokens).toBeGreaterThan(0);
  expect(event.context_tokens).toBeLessThan(turn.total_tokens);
  expect(event.usage.credits_nano).toBeGreaterThan(turn.credits_nano);
});

test('a long session keeps compacting: a transcript larger than the window is summarized in pieces', async () => {
  // Each exchange is ~3,000 tokens (the simulator echoes the message): by the fourth message the
  // turns since the last compaction no longer fit one summary request of this 8,192-token model.
  // Its own tenant: these turns cost more than the shared tenant's credits allow the other tests.
  const rich = await createTenant(api.deps.db, { credits: 1000n });
  const session = await createAgentAndSession(api.deps, rich.projectId, { model: 'openai/gpt-4' });
  for (let i = 1; i <= 6; i++) {
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`message ${i} ${'word '.repeat(1200)}`) }]);
    const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', i);
    expect({ i, type: event.type, stop_reason: event.stop_reason }).toEqual({ i, type: 'session.status_idle', stop_reason: 'end_turn' });
  }
  const events = await listEvents(api.deps, session.sessionId);
  expect(events.filter((e) => e.type === 'session.compaction').length).toBeGreaterThanOrEqual(2);
  // No summary request was larger than the model's window.
  const summaries = simulator.requests.filter((r) => JSON.stringify(r.body).includes('Summarize the conversation below'));
  expect(summaries.length).toBeGreaterThan(0);
  for (const request of summaries) expect(JSON.stringify(request.body).length / 4).toBeLessThan(8192);
});

test('summaries are model calls too: on a balance exhausted mid-compaction no further summary is requested; the ones made are billed', async () => {
  const poor = await createTenant(api.deps.db, { credits: 1000n });
  const session = await createAgentAndSession(api.deps, poor.projectId, { model: 'openai/gpt-4' });
  const marker = `zeta${Date.now()}`;
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${marker} ${'lorem '.repeat(2000)}`) }]);
  expect((await waitForEvent(api.deps, session.sessionId, 'closing')).event.stop_reason).toBe('end_turn');
  // One nano-credit left: the run may start, and its compaction may make one summary call, not two.
  await setBalanceNano(api.deps.db, poor.projectId, 1n);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('ipsum '.repeat(2000)) }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event).toMatchObject({ type: 'session.error', error_code: 'rate_limit_error', content: [{ message: CREDITS_EXHAUSTED_MESSAGE }] });
  const summaries = simulator.requests.filter((r) => JSON.stringify(r.body).includes('Summarize the conversation') && JSON.stringify(r.body).includes(marker));
  expect(summaries).toHaveLength(1);
  expect(event.usage.credits_nano).toBeGreaterThan(0); // the summary made is billed with the run
  expect(await getBalanceNano(api.deps.db, poor.projectId)).toBe(1n - BigInt(event.usage.credits_nano));
});

test('context_exceeded: a single message that cannot fit even after compaction', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4' });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('gamma '.repeat(7000)) }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.type).toBe('session.error');
  expect(event.error_code).toBe('context_exceeded');
  expect((await listEvents(api.deps, session.sessionId)).some((e) => e.type === 'agent.message')).toBe(false);
});

test('context_exceeded after earlier turns: a newest message no summary can make fit requests (and bills) no summary', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4' });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('a short first question') }]);
  expect((await waitForEvent(api.deps, session.sessionId, 'closing')).event.stop_reason).toBe('end_turn');
  const summariesBefore = simulator.requests.filter((r) => JSON.stringify(r.body).includes('Summarize the conversation below')).length;

  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('delta '.repeat(7000)) }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event.error_code).toBe('context_exceeded');
  expect(event.usage.credits_nano).toBe(0);
  expect(events.some((e) => e.type === 'session.compaction')).toBe(false);
  expect(simulator.requests.filter((r) => JSON.stringify(r.body).includes('Summarize the conversation below')).length).toBe(summariesBefore);
});

test('toolset_incomplete: echo/random_number outside development fail the run at start', async () => {
  const session = await createAgentAndSession(production.deps, tenant.projectId, { tools: [{ type: 'random_number', name: 'dice' }] });
  await sendEvents(production.deps, session, [{ type: 'user.message', content: text('roll') }]);
  const { event, events } = await waitForEvent(production.deps, session.sessionId, 'closing');
  expect(event.error_code).toBe('toolset_incomplete');
  expect(events.map((e) => e.type)).toEqual(['user.message', 'session.status_running', 'session.error']);
});

test('invalid_tool_schema: an agent stored with an unusable input schema fails the run at start', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'broken', input_schema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('use it') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.error_code).toBe('invalid_tool_schema');
});

test('invalid_tool_schema: a deferred tool whose schema is too large to compile at create time and references nothing fails the run at start', async () => {
  // Above 64 KB the api checks only the meta-schema; the gateway validates a deferred tool's inputs, so the run compiles it.
  const padding = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`p${i}`, { type: 'string', description: 'x'.repeat(40) }]));
  const schema = { type: 'object', properties: { ...padding, a: { $ref: '#/definitions/missing' } } };
  expect(JSON.stringify(schema).length).toBeGreaterThan(64 * 1024);
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'big', description: 'd', defer_loading: true, input_schema: schema }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('use it') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.error_code).toBe('invalid_tool_schema');
  expect(events.map((e) => e.type)).toEqual(['user.message', 'session.status_running', 'session.error']);
});

test('upstream_timeout: a provider that never answers is retried, then reported', async () => {
  const session = await createAgentAndSession(production.deps, tenant.projectId);
  await sendEvents(production.deps, session, [{ type: 'user.message', content: text('[[delay:5000]] slow') }]);
  const { event } = await waitForEvent(production.deps, session.sessionId, 'closing', 1, 40_000);
  expect(event.error_code).toBe('upstream_timeout');
});

test('run_interrupted: an operator cancelling the workflow still closes the run in the log', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[delay:20000]] long') }]);
  await waitForEvent(api.deps, session.sessionId, 'session.status_running');
  const client = await api.deps.temporal.get();
  await client.workflow.getHandle(`session/${session.sessionId}`).cancel();
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.error_code).toBe('run_interrupted');
  const row = (await api.deps.db.query('SELECT status, active_run_id FROM sessions WHERE id = $1', [session.sessionId])).rows[0];
  expect(row).toEqual({ status: 'error', active_run_id: null });
});

test('run_interrupted while paused; the next message starts a fresh workflow for the session', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'lookup', input_schema: { type: 'object' } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {}]]') }]);
  await waitForEvent(api.deps, session.sessionId, 'closing');
  const client = await api.deps.temporal.get();
  await client.workflow.getHandle(`session/${session.sessionId}`).cancel();
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event.error_code).toBe('run_interrupted');
  // Through the events API, which first cancels the outstanding call with a synthetic result.
  const response = await fetch(`${api.url}/v1/sessions/${session.sessionId}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events: [{ type: 'user.message', content: text('still there?') }] }),
  });
  expect(response.status).toBe(200);
  const { event: next, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 3);
  expect(events.find((e) => e.type === 'user.tool_result')!.error_code).toBe('cancelled');
  expect({ type: next.type, stop_reason: next.stop_reason }).toEqual({ type: 'session.status_idle', stop_reason: 'end_turn' });
});
