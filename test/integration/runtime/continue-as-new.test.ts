import { apiCaller, useRuntimeEnv, waitForEvent } from '../../support/runtime';
import { startOwnTemporal } from '../../support/own-temporal';

/**
 * Continue-as-new, on a Temporal dev server of this test's own that suggests it after 40
 * history events (the shared server suggests it at Temporal's default, 4,096): a session
 * whose queue of messages never empties must still continue as new at a run's end, and the
 * next execution keeps the session's current title in its memo.
 */
const SUGGEST_AFTER_EVENTS = 40;
let temporal: Awaited<ReturnType<typeof startOwnTemporal>>;
const apiEnv: Record<string, string> = {};
beforeAll(async () => {
  temporal = await startOwnTemporal({ 'limit.historyCount.suggestContinueAsNew': SUGGEST_AFTER_EVENTS });
  apiEnv.TEMPORAL_ADDRESS = temporal.address; // read by the runtime env's own beforeAll, which runs next
});
const env = useRuntimeEnv(apiEnv);
afterAll(async () => {
  await temporal?.stop(); // after the runtime env's worker and api have stopped
});

const call = apiCaller(env);

test('a session whose queue never empties continues as new at a run end, the renamed title in the memo, and every message runs once, in order', async () => {
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'queue agent', model: 'openai/gpt-4o-mini' });
  const session = await call('POST', '/v1/sessions', { agent: agent.body.id, title: 'first title' });
  const sessionId = session.body.id as string;
  expect((await call('PATCH', `/v1/sessions/${sessionId}`, { title: 'renamed title' })).status).toBe(200);

  // Each run waits 150 ms upstream; all twelve messages are in the log before the second run starts.
  const MESSAGES = 12;
  for (let i = 1; i <= MESSAGES; i++) {
    const sent = await call('POST', `/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: `message ${i} [[delay:150]]` }] }] });
    expect(sent.status).toBe(200);
  }
  const { events } = await waitForEvent(env.api.deps, sessionId, 'closing', MESSAGES, 60_000);

  // Every message answered once, in the order sent.
  const replies = events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text);
  expect(replies).toEqual(Array.from({ length: MESSAGES }, (_, i) => `You said: message ${i + 1}`));
  expect(events.filter((e) => e.type === 'session.status_idle').every((e) => e.stop_reason === 'end_turn')).toBe(true);
  expect(events.filter((e) => e.type === 'session.status_running')).toHaveLength(MESSAGES);

  // The queue never emptied, yet the workflow continued as new: no execution's history went
  // far past the suggestion (a one-turn run's events, about 20, past it at most).
  const client = await env.api.deps.temporal.get();
  const executions = [];
  for await (const execution of client.workflow.list({ query: `WorkflowId = 'session/${sessionId}'` })) executions.push(execution);
  expect(executions.length).toBeGreaterThan(1);
  for (const execution of executions) expect(execution.historyLength).toBeLessThan(SUGGEST_AFTER_EVENTS + 25);
  const latest = executions.find((execution) => execution.status.name === 'RUNNING')!;
  expect(latest.memo).toEqual({ title: 'renamed title' });
}, 90_000);
