import { createActivities } from '../../../activities';
import { startApi, type TestApi } from '../../support/harness';
import { startTestSimulator, type Simulator } from '../../support/simulator';
import { createTenant, type Tenant } from '../../support/factories';
import { createAgentAndSession, listEvents, sendEvents, startTestWorker, text, waitForEvent } from '../../support/runtime';
import { setBalanceNano } from '../../support/credits';
import { CREDITS_EXHAUSTED_MESSAGE } from '../../../src/domain/run';

/**
 * Runs whose server tools start 1.5 s late: what happens while a run is known to be inside its
 * tool loop. A message sent then lands in the log between that run's tool call and the call's
 * result: when the run answering that message compacts, the summary must take the whole earlier
 * run (call and result), as a kept result whose call was summarized is a history every provider
 * refuses. And the run's turns so far are used but not yet billed: another run of the project
 * must count them.
 */
let simulator: Simulator;
let api: TestApi;
let worker: Awaited<ReturnType<typeof startTestWorker>>;
let tenant: Tenant;

beforeAll(async () => {
  simulator = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: simulator.url });
  const activities = createActivities(api.deps);
  worker = await startTestWorker(api.deps, {
    activities: {
      ...activities,
      runServerTool: async (input: Parameters<typeof activities.runServerTool>[0]) => {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        return activities.runServerTool(input);
      },
    },
  });
  // openai/gpt-4 is dear (30 USD a million input tokens) and these prompts fill its window.
  tenant = await createTenant(api.deps.db, { credits: 2000n });
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await simulator?.close();
});

type OpenAIMessage = { role: string; tool_calls?: Array<{ id: string }>; tool_call_id?: string; content?: unknown };

test('compaction never keeps a tool result whose call it summarized', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4', tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'alpha '.repeat(2500)}[[tool:say {"message":"ping"}]]`) }]);
  await waitForEvent(api.deps, session.sessionId, 'agent.tool_use');
  // The echo has not run yet: this message sits between the call and its result.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'beta '.repeat(3000)}[[tokens:10]]`) }]);

  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  const types = events.map((e) => e.type);
  expect(types.indexOf('user.message', 1)).toBeLessThan(types.indexOf('user.tool_result')); // the order this test is about
  expect(event).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  expect(types.filter((t) => t === 'session.compaction')).toHaveLength(1);

  // The turn after the compaction: the summary, then the second message verbatim, and no
  // tool message without the assistant call it answers.
  const turn = simulator.requests.filter((r) => JSON.stringify(r.body).includes('beta beta') && !JSON.stringify(r.body).includes('Summarize the conversation')).at(-1)!;
  const messages = (turn.body as { messages: OpenAIMessage[] }).messages;
  const calls = new Set<string>();
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) calls.add(call.id);
    if (message.role === 'tool') expect(calls.has(message.tool_call_id!)).toBe(true);
  }
  // The whole first run is in the summary; the turn holds it and the second message.
  expect(messages.map((m) => m.role)).toEqual(['user']);
  const sent = String(messages[0]!.content);
  expect(sent.startsWith('Summary of the earlier conversation')).toBe(true);
  expect(sent.endsWith('beta [[tokens:10]]')).toBe(true);
});

test('a message still queued when an earlier run compacts is answered by its own run afterwards', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4', tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'alpha '.repeat(2500)}[[tool:say {"message":"ping"}]]`) }]);
  await waitForEvent(api.deps, session.sessionId, 'agent.tool_use');
  // Two requests during the first run's tool loop: two runs, the second queued behind the first.
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'beta '.repeat(3000)}[[tokens:10]]`) }]);
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('third question marker') }]);

  const { events } = await waitForEvent(api.deps, session.sessionId, 'closing', 3);
  expect(events.filter((e) => e.type === 'session.compaction')).toHaveLength(1);
  const closings = events.filter((e) => e.type === 'session.status_idle' || e.type === 'session.error');
  expect(closings.map((e) => e.stop_reason)).toEqual(['end_turn', 'end_turn', 'end_turn']);
  // The third run's model call held its own message, after the summary and the second message.
  const third = simulator.requests.filter((r) => JSON.stringify(r.body).includes('third question marker')).at(-1)!;
  const messages = (third.body as { messages: OpenAIMessage[] }).messages;
  expect(String(messages.at(-1)!.content)).toContain('third question marker');
  expect(JSON.stringify(messages)).toContain('Summary of the earlier conversation');
});

test('system.message instructions outlive a compaction: kept, not summarized', async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { model: 'openai/gpt-4', system_prompt: 'You are terse.' });
  await sendEvents(api.deps, session, [
    { type: 'system.message', content: text('Always answer in French.') },
    { type: 'user.message', content: text(`${'gamma '.repeat(2500)}[[tokens:20]]`) },
  ]);
  await waitForEvent(api.deps, session.sessionId, 'closing');
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text(`${'delta '.repeat(3000)}[[tokens:10]]`) }]);
  const { event, events } = await waitForEvent(api.deps, session.sessionId, 'closing', 2);
  expect(event).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  expect(events.filter((e) => e.type === 'session.compaction')).toHaveLength(1);

  const turn = simulator.requests.filter((r) => JSON.stringify(r.body).includes('delta delta') && !JSON.stringify(r.body).includes('Summarize the conversation')).at(-1)!;
  const messages = (turn.body as { messages: OpenAIMessage[] }).messages;
  expect(messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('Always answer in French.') });
  expect(JSON.stringify(messages)).toContain('Summary of the earlier conversation');
});

test("a run counts the project's other runs' turns not yet billed: concurrent runs cannot each spend the whole balance", async () => {
  const poor = await createTenant(api.deps.db, { credits: 1n });
  await setBalanceNano(api.deps.db, poor.projectId, 1n); // (the runtime reads the balance itself)
  const first = await createAgentAndSession(api.deps, poor.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  await sendEvents(api.deps, first, [{ type: 'user.message', content: text('[[tool:say {"message":"ping"}]]') }]);
  // Its first turn is done (and costs more than the balance) but is billed only when the run closes.
  await waitForEvent(api.deps, first.sessionId, 'session.turn_usage');
  const second = await createAgentAndSession(api.deps, poor.projectId);
  await sendEvents(api.deps, second, [{ type: 'user.message', content: text('hello') }]);
  const { event } = await waitForEvent(api.deps, second.sessionId, 'closing');
  // Said as the credit check reckoned it, not as a provider's rate limit.
  expect(event).toMatchObject({ type: 'session.error', error_code: 'rate_limit_error', content: [{ message: CREDITS_EXHAUSTED_MESSAGE }] });
  expect((await listEvents(api.deps, second.sessionId)).some((e) => e.type === 'session.turn_usage')).toBe(false);
  await waitForEvent(api.deps, first.sessionId, 'closing');
});

test("a gateway tool the agent turns into a client tool while its call runs: a retryable tool_unavailable, not 'no tool named'", async () => {
  const session = await createAgentAndSession(api.deps, tenant.projectId, { tools: [{ type: 'echo', name: 'x' }] });
  await sendEvents(api.deps, session, [{ type: 'user.message', content: text('[[tool:x {"message":"a"}]] go') }]);
  await waitForEvent(api.deps, session.sessionId, 'agent.tool_use');
  // The echo has not run yet (it starts 1.5 s late): the agent now has a client tool of that name.
  await api.deps.db.query(`UPDATE agents SET tools = $2 WHERE id = $1`, [session.agentId, JSON.stringify([{ type: 'custom', name: 'x', input_schema: { type: 'object' } }])]);
  const { event } = await waitForEvent(api.deps, session.sessionId, 'user.tool_result');
  expect(event.error_code).toBe('tool_unavailable');
  expect(JSON.parse(event.content[0].content)).toEqual({ error: { code: 'tool_unavailable', message: "the agent's tool x changed while this call ran; call it again", retryable: true } });
});
