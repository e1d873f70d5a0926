import { startApi, type TestApi } from '../../support/harness';
import { startTestSimulator, type Simulator } from '../../support/simulator';
import { createTenant, type Tenant } from '../../support/factories';
import { createAgentAndSession, sendEvents, startTestWorker, text, waitForEvent, listEvents } from '../../support/runtime';
import { getBalanceNano } from '../../../src/billing/credits';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession } from '../../../src/store/events';

let api: TestApi;
let simulator: Simulator;
let worker: Awaited<ReturnType<typeof startTestWorker>>;
let tenant: Tenant;

beforeAll(async () => {
  simulator = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: simulator.url, RUN_ABANDON_AFTER_MS: '4000' });
  worker = await startTestWorker(api.deps);
  tenant = await createTenant(api.deps.db, { credits: 100n });
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await simulator?.close();
});

test('a user message runs: status_running, agent.message, turn usage, status_idle end_turn; usage billed once', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  const before = await getBalanceNano(api.deps.db, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('hello there') }]);
  const { events, event: idle } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(events.map((e) => e.type)).toEqual(['user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle']);
  // Only the spec's fields: the runtime's bookkeeping attributes stay internal.
  const common = ['content', 'created_at', 'id', 'processed_at', 'type'];
  expect(Object.keys(events[1]!).sort()).toEqual(common);
  expect(Object.keys(events[3]!).sort()).toEqual(common);
  expect(Object.keys(idle).sort()).toEqual([...common, 'context_tokens', 'stop_reason', 'usage'].sort());
  expect(idle.stop_reason).toBe('end_turn');
  const turn = events.find((e) => e.type === 'session.turn_usage')!.content[0];
  expect(turn).toMatchObject({ turn: 1, model: 'openai/gpt-4o-mini', total_tokens: turn.input_tokens + turn.output_tokens + turn.cache_read_input_tokens + turn.cache_creation_input_tokens });
  expect(idle.context_tokens).toBe(turn.total_tokens);
  expect(idle.usage.credits_nano).toBe(turn.credits_nano);
  expect(idle.usage.credits_nano).toBeGreaterThan(0);
  expect(events[0]!.processed_at).not.toBeNull();
  const after = await getBalanceNano(api.deps.db, tenant.projectId);
  expect(before - after).toBe(BigInt(idle.usage.credits_nano));
  const row = (await api.deps.db.query('SELECT status, credits_nano::int, active_run_id FROM sessions WHERE id = $1', [session.sessionId])).rows[0];
  expect(row).toEqual({ status: 'idle', credits_nano: idle.usage.credits_nano, active_run_id: null });
});

test('a client tool pauses the run with tool_use_ids and traceparents; the result resumes it', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
  });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:get_weather {"city":"Paris"}]]') }]);
  const { event: paused, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(paused.stop_reason).toBe('client_tool_use');
  const toolUse = events.find((e) => e.type === 'agent.tool_use')!;
  expect(toolUse.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
  expect(paused.tool_use_ids).toEqual([toolUse.content[0].id]);
  expect(paused.tool_traceparents[toolUse.content[0].id]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

  await sendEvents(api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: toolUse.content[0].id, content: 'sunny, 21C' }] }]);
  const { event: done, events: all } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(done.stop_reason).toBe('end_turn');
  expect(all.filter((e) => e.type === 'session.status_running')).toHaveLength(2);
  expect(all.at(-2)!.type).toBe('session.turn_usage');
});

test('user.interrupt cancels exactly the run in flight: status_idle user_cancelled', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[delay:20000]] slow please') }]);
  await waitForEvent(api.deps, session.sessionId, 'session.status_running');
  const started = Date.now();
  await sendEvents(api.deps, session, [{ type: 'user.interrupt', content: [] }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('user_cancelled');
  expect(Date.now() - started).toBeLessThan(15_000);
});

test('an interrupt that names a run before the workflow has started it still cancels that run', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  // With no worker polling, the message's signal and the interrupt's reach the workflow in
  // one activation, before it has started the run the api claimed for the message.
  await worker.stop();
  try {
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[delay:20000]] never asked') }]);
    await sendEvents(api.deps, session, [{ type: 'user.interrupt', content: [] }]);
  } finally {
    worker = await startTestWorker(api.deps);
  }
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('user_cancelled');
  expect(events.map((e) => e.type)).toEqual(['user.message', 'user.interrupt', 'session.status_running', 'session.status_idle']);
  expect(simulator.requests.some((r) => JSON.stringify(r.body).includes('never asked'))).toBe(false);
});

test('a message sent after the interrupt of a run not yet started gets a run of its own', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  // The api claimed a run for the first message; the interrupt names it; the second message
  // comes after the interrupt. The workflow sees all three at its first claim.
  await worker.stop();
  try {
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text('cancelled one') }]);
    await sendEvents(api.deps, session, [{ type: 'user.interrupt', content: [] }]);
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text('answered one') }]);
  } finally {
    worker = await startTestWorker(api.deps);
  }
  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  const closings = events.filter((e) => e.type === 'session.status_idle');
  expect(closings.map((e) => e.stop_reason)).toEqual(['user_cancelled', 'end_turn']);
  const { rows: messages } = await api.deps.db.query("SELECT run_id, processed_at FROM session_events WHERE session_id = $1 AND type = 'user.message' ORDER BY seq", [session.sessionId]);
  expect(messages).toHaveLength(2);
  expect(messages[1].processed_at).not.toBeNull();
  expect(messages[1].run_id).not.toBe(messages[0].run_id);
  expect(events.filter((e) => e.type === 'agent.message')).toHaveLength(1);
  // One model call, the second run's: the cancelled message is in its history, as sent.
  const calls = simulator.requests.filter((r) => JSON.stringify(r.body).includes('cancelled one'));
  expect(calls).toHaveLength(1);
  expect(JSON.stringify(calls[0]!.body)).toContain('answered one');
});

test("an interrupt already in the log when the run is claimed (its signal not yet arrived) cancels the run before any model call", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await worker.stop();
  try {
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[delay:20000]] claimed then interrupted') }]);
    // The interrupt is committed naming the claimed run, but its signal is never sent.
    await withTransaction(api.deps.db, async (client) => {
      const { active_run_id } = (await lockSession(client, session.sessionId))!;
      await appendEvents(client, session.sessionId, [{ type: 'user.interrupt', content: [], run_id: active_run_id }]);
    });
  } finally {
    worker = await startTestWorker(api.deps);
  }
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('user_cancelled');
  expect(simulator.requests.some((r) => JSON.stringify(r.body).includes('claimed then interrupted'))).toBe(false);
});

test('a compaction whose summary call takes longer than the heartbeat timeout still completes', async () => {
  // The first message's [[delay]] is in the transcript the summary call sends, so that call
  // takes 11 s: longer than the 10 s heartbeat timeout of a run's activities.
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4' });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'alpha '.repeat(2500)}[[tokens:20]] [[delay:11000]]`) }]);
  await waitForEvent(api.deps, session.sessionId, 'closing', 1, 30_000);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'beta '.repeat(3000)}[[tokens:10]]`) }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2, 40_000);
  expect(event.stop_reason).toBe('end_turn');
  expect(events.filter((e) => e.type === 'session.compaction')).toHaveLength(1);
  const summaryCalls = simulator.requests.filter((r) => JSON.stringify(r.body).includes('Summarize the conversation'));
  expect(summaryCalls).toHaveLength(1); // not retried after a heartbeat timeout
}, 90_000);

test('server-side echo tool runs as an activity and the run continues', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"ping-42"}]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('end_turn');
  const result = events.find((e) => e.type === 'user.tool_result')!;
  expect(result.content[0]).toMatchObject({ content: 'ping-42' });
  expect(events.filter((e) => e.type === 'session.turn_usage')).toHaveLength(2);
  expect(event.usage.credits_nano).toBe(events.filter((e) => e.type === 'session.turn_usage').reduce((sum, e) => sum + e.content[0].credits_nano, 0));
});

test('a five-turn tool loop: each turn is billed, the run closes with the sum', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] }, );
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"loop"}]] [[repeat:4]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('end_turn');
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0]);
  expect(turns.map((t) => t.turn)).toEqual([1, 2, 3, 4, 5]);
  expect(events.filter((e) => e.type === 'user.tool_result')).toHaveLength(4);
  expect(event.usage.credits_nano).toBe(turns.reduce((sum, t) => sum + t.credits_nano, 0));
  expect(event.usage.input_tokens).toBe(turns.reduce((sum, t) => sum + t.input_tokens, 0));
});

test('deferred tools stay out of the tool list; search_tools finds them by name, label and description', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [
      { name: 'book', label: 'reservations', description: 'books a table', defer_loading: true, input_schema: { type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] } },
      { name: 'visible', description: 'always there', input_schema: { type: 'object' } },
    ],
  });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:search_tools {"query":"reservations"}]]') }]);
  const { events, event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('end_turn');
  const result = events.find((e) => e.type === 'user.tool_result')!;
  expect(JSON.parse(result.content[0].content)).toEqual({ tools: [{ name: 'book', label: 'reservations', description: 'books a table' }] });
  const offered = simulator.requests
    .map((r) => r.body as { tools?: Array<{ function: { name: string } }>; messages?: Array<{ content: unknown }> })
    .filter((b) => JSON.stringify(b.messages ?? '').includes('reservations'))
    .map((b) => (b.tools ?? []).map((t) => t.function.name));
  expect(offered[0]).toEqual(['visible', 'search_tools']);
});

test('a deferred tool named directly is loaded (tool_loaded, nothing executed), then validated strictly; a valid call goes to the client', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [{ name: 'book', description: 'books a table', defer_loading: true, input_schema: { type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] } }],
  });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool-unoffered:book {"seats":2}]]') }]);
  let { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const loaded = events.find((e) => e.type === 'user.tool_result')!;
  expect(loaded.content[0]).toMatchObject({ status: 'tool_loaded' });
  expect(loaded.content[0].is_error).toBe(false);

  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:book {"seats":"two"}]]') }]);
  ({ events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2));
  const rejected = events.filter((e) => e.type === 'user.tool_result')[1]!;
  expect(rejected.error_code).toBe('invalid_input');
  expect(JSON.parse(rejected.content[0].content)).toEqual({ error: { code: 'invalid_input', message: 'seats must be integer', field: 'seats', retryable: true } });

  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:book {"seats":4}]]') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 3);
  expect(event.stop_reason).toBe('client_tool_use');
});

test('a deferred tool declaring another draft (2019-09) is validated as draft-07: a valid call goes to the client, and every turn is billed', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [{ name: 'book', description: 'books a table', defer_loading: true, input_schema: { $schema: 'https://json-schema.org/draft/2019-09/schema', $id: 'https://tenant.example/book', type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] } }],
  });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool-unoffered:book {"seats":2}]] [[repeat:2]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('client_tool_use');
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0]);
  expect(turns).toHaveLength(2);
  expect(event.usage.credits_nano).toBe(turns.reduce((sum, t) => sum + t.credits_nano, 0));
});

test('random_number takes JSON integers only: null, numeric strings, booleans and arrays are invalid_input', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'random_number', name: 'dice' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:dice {"min":null,"max":"3"}]] [[tool:dice {"min":"","max":true}]] [[tool:dice {"min":[],"max":[2]}]] [[tool:dice {"min":1,"max":1}]]') }]);
  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const results = events.filter((e) => e.type === 'user.tool_result').flatMap((e) => e.content);
  expect(results.map((r) => r.is_error)).toEqual([true, true, true, false]);
  expect(results[3].content).toBe('1');
});

test('a deferred tool named twice in one turn is loaded once and both calls are answered tool_loaded, even a malformed second one', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [{ name: 'book', description: 'books a table', defer_loading: true, input_schema: { type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] } }],
  });
  // Neither call was made with the tool in the model's list: the first one's tool_loaded result,
  // written before the second call runs, must not get the second one validated.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool-unoffered:book {"seats":2}]] [[tool-unoffered:book {"seats":"bad"}]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('end_turn');
  const results = events.filter((e) => e.type === 'user.tool_result').flatMap((e) => e.content);
  expect(results).toHaveLength(2);
  for (const result of results) expect(result).toMatchObject({ status: 'tool_loaded' });
});

test('random_number answers a range it cannot draw from with a model-readable invalid_input', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'random_number', name: 'dice' }] });
  // 2^48 - 1: the exclusive bound randomInt would need is one past its limit.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:dice {"min":0,"max":281474976710655}]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.stop_reason).toBe('end_turn');
  const result = events.find((e) => e.type === 'user.tool_result')!;
  expect(result.error_code).toBe('invalid_input');
  expect(JSON.parse(result.content[0].content).error).toMatchObject({ code: 'invalid_input', field: 'max', retryable: true });
});

test('echo returns its message unchanged, and answers a message that is not a string with invalid_input (never altered)', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":{"a":1}}]]') }]);
  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const result = events.find((e) => e.type === 'user.tool_result')!;
  expect(result.error_code).toBe('invalid_input');
  expect(JSON.parse(result.content[0].content).error).toMatchObject({ code: 'invalid_input', field: 'message', retryable: true });
});

test('an upstream client error ends the run with session.error upstream_error', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[error:400]] fail') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.type).toBe('session.error');
  expect(event.error_code).toBe('upstream_error');
  expect(event.content).toEqual([{ type: 'error', message: expect.any(String), code: 'upstream_error' }]);
  expect(event.usage).toMatchObject({ credits_nano: 0 });
  const row = (await api.deps.db.query('SELECT status FROM sessions WHERE id = $1', [session.sessionId])).rows[0];
  expect(row.status).toBe('error');
});

test('a run that fails after a billed turn reports that usage on its session.error, and the credits are debited', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  const before = await getBalanceNano(api.deps.db, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"first"}]] [[then-error:400]]') }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event.type).toBe('session.error');
  expect(event.error_code).toBe('upstream_error');
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0]);
  expect(turns).toHaveLength(1);
  expect(event.usage.credits_nano).toBe(turns[0].credits_nano);
  expect(event.usage.credits_nano).toBeGreaterThan(0);
  expect(before - (await getBalanceNano(api.deps.db, tenant.projectId))).toBe(BigInt(event.usage.credits_nano));
});

test("a turn whose stream broke midway and was retried: the run's charge includes what the broken attempt used", async () => {
  // Anthropic reports the prompt's tokens when the stream opens, so the broken attempt's input is exact.
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'anthropic/claude-haiku-4-5' });
  const before = await getBalanceNano(api.deps.db, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[cut-first:5]] [[tokens:30]] break once') }]);
  const { event: idle, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(idle).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0]);
  expect(turns).toHaveLength(1);
  const [turn] = turns;
  // The closing usage: the kept turn plus the broken attempt (the same prompt, some output).
  expect(idle.usage.input_tokens).toBe(2 * turn.input_tokens);
  const brokenOutput = idle.usage.output_tokens - turn.output_tokens;
  expect(brokenOutput).toBeGreaterThan(0);
  expect(idle.usage.credits_nano).toBe(turn.credits_nano + turn.input_tokens * 100_000 + brokenOutput * 500_000);
  expect(before - (await getBalanceNano(api.deps.db, tenant.projectId))).toBe(BigInt(idle.usage.credits_nano));
});

test('a run whose only attempt broke midway (a mid-stream client error) is charged what that attempt used', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'anthropic/claude-haiku-4-5' });
  const before = await getBalanceNano(api.deps.db, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[stream-error:400]] [[cut:5]] [[tokens:30]] fail midway') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event).toMatchObject({ type: 'session.error', error_code: 'upstream_error' });
  expect(event.usage.input_tokens).toBeGreaterThan(0);
  expect(event.usage.output_tokens).toBeGreaterThan(0);
  expect(event.usage.credits_nano).toBe(event.usage.input_tokens * 100_000 + event.usage.output_tokens * 500_000);
  expect(before - (await getBalanceNano(api.deps.db, tenant.projectId))).toBe(BigInt(event.usage.credits_nano));
  const row = (await api.deps.db.query('SELECT input_tokens, output_tokens, credits_nano FROM sessions WHERE id = $1', [session.sessionId])).rows[0];
  expect(Number(row.credits_nano)).toBe(event.usage.credits_nano);
});

test("an agent whose model changes during a run: the run's usage rows are per model, each the sum of that model's turns", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  // Three turns; the ones after a tool result answer after 800 ms, so the change lands mid-run.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"x"}]] [[repeat:2]] [[then-delay:800]]') }]);
  await waitForEvent(api.deps, session.sessionId, 'session.turn_usage');
  await api.deps.db.query("UPDATE agents SET model = 'anthropic/claude-haiku-4-5' WHERE id = $1", [session.agentId]);
  const { event: idle, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0]);
  expect(turns).toHaveLength(3);
  expect(new Set(turns.map((t) => t.model))).toEqual(new Set(['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5']));
  const { rows } = await api.deps.db.query(
    `SELECT model, input_tokens::int, output_tokens::int, credits_nano::bigint AS credits FROM usage_records
      WHERE request_id = (SELECT run_id FROM session_events WHERE id = $1) ORDER BY model`,
    [idle.id],
  );
  const expected = ['anthropic/claude-haiku-4-5', 'openai/gpt-4o-mini'].map((model) => {
    const mine = turns.filter((t) => t.model === model);
    return {
      model,
      input_tokens: mine.reduce((sum, t) => sum + t.input_tokens, 0),
      output_tokens: mine.reduce((sum, t) => sum + t.output_tokens, 0),
      credits: String(mine.reduce((sum, t) => sum + t.credits_nano, 0)),
    };
  });
  expect(rows).toEqual(expected);
  expect(rows.reduce((sum, row) => sum + Number(row.credits), 0)).toBe(idle.usage.credits_nano);
});

test('a broken attempt is billed also when an interrupt ends the run before its retry; a break before any output is not billed', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'anthropic/claude-haiku-4-5' });
  const before = await getBalanceNano(api.deps.db, tenant.projectId);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[cut-first:5]] [[tokens:30]] break, then stop') }]);
  // The first attempt broke and was recorded; its retry waits out the back-off (1 s): interrupt now.
  const broken = async () => (await api.deps.db.query('SELECT usage FROM run_attempt_usage WHERE key LIKE $1', [`%:turn:1:attempt:1`])).rows;
  for (const deadline = Date.now() + 10_000; (await api.deps.db.query(
    `SELECT 1 FROM run_attempt_usage w JOIN sessions s ON s.active_run_id = w.run_id WHERE s.id = $1`, [session.sessionId])).rowCount === 0; ) {
    if (Date.now() > deadline) throw new Error(`no broken attempt recorded: ${JSON.stringify(await broken())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await sendEvents(api.deps, session, [{ type: 'user.interrupt', content: [] }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  expect(event).toMatchObject({ type: 'session.status_idle', stop_reason: 'user_cancelled' });
  expect(events.filter((e) => e.type === 'session.turn_usage')).toHaveLength(0);
  expect(event.usage.output_tokens).toBeGreaterThan(0);
  expect(event.usage.credits_nano).toBe(event.usage.input_tokens * 100_000 + event.usage.output_tokens * 500_000);
  expect(before - (await getBalanceNano(api.deps.db, tenant.projectId))).toBe(BigInt(event.usage.credits_nano));
  // Billed once: the rows are gone with the close.
  expect((await api.deps.db.query('SELECT 1 FROM run_attempt_usage w JOIN session_events e ON e.run_id = w.run_id WHERE e.id = $1', [event.id])).rowCount).toBe(0);

  const early = await createAgentAndSession(api.deps, tenant.projectId, { model: 'anthropic/claude-haiku-4-5' });
  await sendEvents(api.deps, early, [{ type: 'user.message', content: text('[[stream-error:400]] before any text') }]);
  const { event: failed } = await waitForEvent(api.deps, early.sessionId, 'closing');
  expect(failed).toMatchObject({ type: 'session.error', error_code: 'upstream_error', usage: { credits_nano: 0, output_tokens: 0 } });
});

test('a pause nobody answers ends with session.error run_abandoned', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'slow_tool', input_schema: { type: 'object' } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:slow_tool {}]]') }]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 2, 20_000);
  expect(event.type).toBe('session.error');
  expect(event.error_code).toBe('run_abandoned');
  const events = await listEvents(api.deps, session.sessionId);
  expect(events.filter((e) => e.type === 'session.status_idle')[0]!.stop_reason).toBe('client_tool_use');
});

test("results the api accepted before a pause's deadline whose signal never came resume the run at the deadline, not abandon it", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'slow_tool', input_schema: { type: 'object' } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:slow_tool {}]]') }]);
  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const call = events.find((e) => e.type === 'agent.tool_use')!.content[0];
  await sendEvents(api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'done' }] }], { signal: false });
  const { event } = await waitForEvent(api.deps, session.sessionId, 'closing', 2, 20_000);
  expect(event).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
});

test('the recorded history of a paused-and-resumed run replays deterministically against the current code', async () => {
  const { replaySession } = await import('../../../src/temporal/replay');
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ name: 'lookup', input_schema: { type: 'object' } }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {"q":"x"}]]') }]);
  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
  const id = events.find((e) => e.type === 'agent.tool_use')!.content[0].id;
  await sendEvents(api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: id, content: 'found' }] }]);
  await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  const result = await replaySession(await api.deps.temporal.get(), session.sessionId);
  expect(result.events).toBeGreaterThan(10);
});

describe('knowledge-base grounding', () => {
  async function collectionWithDocs() {
    const headers = { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' };
    const created = await fetch(`${api.url}/v1/kb/collections`, { method: 'POST', headers, body: JSON.stringify({ name: `kb ${Date.now()} ${Math.random()}` }) });
    const collection = (await created.json()) as { id: string };
    const bulk = await fetch(`${api.url}/v1/kb/collections/${collection.id}/documents/bulk`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        documents: [
          { id: 'refunds', title: 'Refund policy', uri: 'https://shop.example/refunds', content: 'Refunds are issued within 30 days of purchase.', type: 'page', language: 'en' },
          { id: 'draft', title: 'Draft refunds', uri: 'https://shop.example/draft', content: 'Refunds draft notes, internal.', type: 'draft', language: 'en' },
        ],
      }),
    });
    expect(bulk.status).toBe(200);
    return collection.id;
  }

  test('search and fetch tools answer from the collection within the filter ceiling; the answer cites what was retrieved', async () => {
    const collectionId = await collectionWithDocs();
    const session = await createAgentAndSession(api.deps, tenant.projectId, {
      tools: [{ type: 'knowledge_base', name: 'docs', collection_id: collectionId, filters: { type: ['page'] } }],
    });
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`[[tool:${collectionId}_search {"query":"refunds"}]] [[tool:${collectionId}_fetch {"id":"draft"}]]`) }]);
    const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing');
    expect(event.stop_reason).toBe('end_turn');
    const results = events.filter((e) => e.type === 'user.tool_result');
    const search = JSON.parse(results[0]!.content[0].content);
    expect(search.results.map((r: { id: string }) => r.id)).toEqual(['refunds']); // the draft is outside the ceiling
    expect(results[1]!.content[0]).toMatchObject({ is_error: true, error_code: 'not_found' });
    expect(results[0]).not.toHaveProperty('_citations');
    // The model is told what the search takes: a query, filters to narrow it and how many results.
    type OfferedTool = { function?: { name: string; parameters: { properties: Record<string, unknown> } } };
    const isSearch = (t: OfferedTool) => t.function?.name === `${collectionId}_search`;
    const offered = simulator.requests.map((r) => r.body as { tools?: OfferedTool[] }).find((body) => Array.isArray(body.tools) && body.tools.some(isSearch));
    const searchTool = offered!.tools!.find(isSearch)!;
    expect(Object.keys(searchTool.function!.parameters.properties)).toEqual(['query', 'filters', 'top_n']);
    const answer = events.filter((e) => e.type === 'agent.message').at(-1)!;
    expect(answer.content.find((b: { type: string }) => b.type === 'text').citations).toEqual([
      { type: 'knowledge_base', document_uri: 'https://shop.example/refunds', document_title: 'Refund policy' },
    ]);
  });

  test('documents sharing a link are each cited under their own title', async () => {
    const headers = { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' };
    const collection = (await (await fetch(`${api.url}/v1/kb/collections`, { method: 'POST', headers, body: JSON.stringify({ name: `faq ${Date.now()} ${Math.random()}` }) })).json()) as { id: string };
    const faq = 'https://shop.example/faq';
    await fetch(`${api.url}/v1/kb/collections/${collection.id}/documents/bulk`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        documents: [
          { id: 'q1', title: 'Refund window', uri: faq, content: 'Refunds within 30 days.' },
          { id: 'q2', title: 'Refund method', uri: faq, content: 'Refunds go back to the card used.' },
        ],
      }),
    });
    const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'knowledge_base', name: 'faq', collection_id: collection.id }] });
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`[[tool:${collection.id}_fetch {"id":"q1"}]] [[tool:${collection.id}_fetch {"id":"q2"}]]`) }]);
    const { events } = await waitForEvent(api.deps, session.sessionId, 'closing');
    const answer = events.filter((e) => e.type === 'agent.message').at(-1)!;
    expect(answer.content.find((b: { type: string }) => b.type === 'text').citations).toEqual([
      { type: 'knowledge_base', document_uri: faq, document_title: 'Refund window' },
      { type: 'knowledge_base', document_uri: faq, document_title: 'Refund method' },
    ]);
  });

  test('settings.disable_kb_rag keeps the knowledge-base tools away from the model', async () => {
    const collectionId = await collectionWithDocs();
    const session = await createAgentAndSession(api.deps, tenant.projectId, {
      tools: [{ type: 'knowledge_base', name: 'docs', collection_id: collectionId }],
      settings: { disable_kb_rag: true },
    });
    const marker = `no-kb-${Date.now()}`;
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text(marker) }]);
    await waitForEvent(api.deps, session.sessionId, 'closing');
    const request = simulator.requests.find((r) => JSON.stringify(r.body).includes(marker))!;
    expect((request.body as { tools?: unknown[] }).tools ?? []).toEqual([]);

    // A model that names the hidden search tool anyway retrieves nothing.
    await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`[[tool-unoffered:${collectionId}_search {"query":"refund"}]]`) }]);
    const { events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
    const result = events.filter((e) => e.type === 'user.tool_result').at(-1)!.content[0];
    expect(result).toMatchObject({ is_error: true, error_code: 'tool_unavailable' });
    expect(result.content).not.toContain('Refund policy');
  });
});

test('operators see the session in Temporal: search attributes, memo title and summary', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  await api.deps.db.query('UPDATE sessions SET title = $2 WHERE id = $1', [session.sessionId, 'Support chat']);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('hi operator') }]);
  await waitForEvent(api.deps, session.sessionId, 'closing');
  const client = await api.deps.temporal.get();
  const handle = client.workflow.getHandle(`session/${session.sessionId}`);
  let description = await handle.describe();
  for (let i = 0; i < 50 && description.searchAttributes.SessionStatus?.[0] !== 'idle'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    description = await handle.describe();
  }
  expect(description.searchAttributes).toMatchObject({ ProjectId: [tenant.projectId], AgentId: [session.agentId], SessionStatus: ['idle'] });
  expect(description.taskQueue).toBe(api.deps.config.TEMPORAL_TASK_QUEUE);
  expect(description.type).toBe('sessionWorkflow');
  expect(description.memo).toEqual({ title: 'Support chat' });
  expect(await description.staticSummary()).toBe(`Session ${session.sessionId}: Support chat`);
  // The UI's "current details" (the SDK's metadata query) say what the workflow does now, not the last turn.
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  expect(metadata.currentDetails).toBe('Idle: no run in flight');

  // Renaming the session over the API updates the memo of the running workflow.
  const renamed = await fetch(`${api.url}/v1/sessions/${session.sessionId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Billing question' }),
  });
  expect(renamed.status).toBe(200);
  for (let i = 0; i < 50 && (await handle.describe()).memo?.title !== 'Billing question'; i++) await new Promise((r) => setTimeout(r, 100));
  expect((await handle.describe()).memo).toEqual({ title: 'Billing question' });
});

test('concurrent renames leave the memo with the title that committed last', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  const rename = (title: string | null) =>
    fetch(`${api.url}/v1/sessions/${session.sessionId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title }),
    });
  const client = await api.deps.temporal.get();
  const handle = client.workflow.getHandle(`session/${session.sessionId}`);
  for (let round = 0; round < 5; round++) {
    // Several new titles at once, and one putting back the title as it was before them.
    const before = (await api.deps.db.query('SELECT title FROM sessions WHERE id = $1', [session.sessionId])).rows[0].title;
    const answers = await Promise.all([...Array.from({ length: 5 }, (_, i) => rename(`round ${round} title ${i}`)), rename(before)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const title = (await api.deps.db.query('SELECT title FROM sessions WHERE id = $1', [session.sessionId])).rows[0].title ?? '';
    let memo = (await handle.describe()).memo?.title;
    for (let i = 0; i < 30 && memo !== title; i++) {
      await new Promise((r) => setTimeout(r, 100));
      memo = (await handle.describe()).memo?.title;
    }
    expect(memo).toBe(title);
  }
});

test('a rename before the first message starts the workflow with the new title, idle, so no later start can bring back the old one', async () => {
  // (A rename racing the first message used to be dropped: its signal found no workflow, and
  // the message's request started one with the title it had read before the rename.)
  const session = await createAgentAndSession(api.deps, tenant.projectId);
  const renamed = await fetch(`${api.url}/v1/sessions/${session.sessionId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Renamed early' }),
  });
  expect(renamed.status).toBe(200);
  const client = await api.deps.temporal.get();
  const handle = client.workflow.getHandle(`session/${session.sessionId}`);
  let description = await handle.describe();
  for (let i = 0; i < 50 && description.memo?.title !== 'Renamed early'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    description = await handle.describe();
  }
  expect(description.memo).toEqual({ title: 'Renamed early' });
  expect(description.searchAttributes).toMatchObject({ SessionStatus: ['idle'] });
  expect((await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails).toBe('Idle: no run in flight');
  // The session runs as usual afterwards.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('after the rename') }]);
  expect((await waitForEvent(api.deps, session.sessionId, 'closing')).event.stop_reason).toBe('end_turn');
});
