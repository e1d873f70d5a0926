import { apiCaller, useRuntimeEnv, waitForEvent } from '../../support/runtime';
import { startOwnTemporal } from '../../support/own-temporal';
import type { temporal as proto } from '@temporalio/proto';

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

test('a session whose queue never empties continues as new at run ends, handing over the claimed run; the renamed title stays in the memo; every message runs once, in order', async () => {
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'queue agent', model: 'openai/gpt-4o-mini' });
  const session = await call('POST', '/v1/sessions', { agent: agent.body.id, title: 'first title' });
  const sessionId = session.body.id as string;
  expect((await call('PATCH', `/v1/sessions/${sessionId}`, { title: 'renamed title' })).status).toBe(200);

  // The first run waits 2 s upstream: every later message is queued behind it before it ends.
  const MESSAGES = 12;
  for (let i = 1; i <= MESSAGES; i++) {
    const delay = i === 1 ? 2000 : 50;
    const sent = await call('POST', `/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: `message ${i} [[delay:${delay}]]` }] }] });
    expect(sent.status).toBe(200);
  }
  const { events } = await waitForEvent(env.api.deps, sessionId, 'closing', MESSAGES, 60_000);

  // Every message answered once, in the order sent, and no run was taken for an orphan.
  const replies = events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text);
  expect(replies).toEqual(Array.from({ length: MESSAGES }, (_, i) => `You said: message ${i + 1}`));
  expect(events.filter((e) => e.type === 'session.status_idle').map((e) => e.stop_reason)).toEqual(Array(MESSAGES).fill('end_turn'));
  expect(events.filter((e) => e.type === 'session.status_running')).toHaveLength(MESSAGES);

  // The execution chain, newest first, read from the histories themselves (each names the one it continued).
  const client = await env.api.deps.temporal.get();
  const workflowId = `session/${sessionId}`;
  const current = await client.workflow.getHandle(workflowId).describe();
  expect(current.memo).toEqual({ title: 'renamed title' });
  const chain: Array<{ length: number; handover?: string }> = [];
  for (let runId: string | undefined = current.runId; runId; ) {
    const history: proto.api.history.v1.IHistoryEvent[] = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    const started: proto.api.history.v1.IWorkflowExecutionStartedEventAttributes = history[0]!.workflowExecutionStartedEventAttributes!;
    const handedOver = started.input?.payloads?.[0]?.data ? JSON.parse(Buffer.from(started.input.payloads[0].data).toString()).claimed?.runId : undefined;
    chain.push({ length: history.length, ...(handedOver ? { handover: handedOver } : {}) });
    runId = started.continuedExecutionRunId || undefined;
  }
  // The queue never emptied while the runs went on, yet the workflow continued as new at run ends,
  // each time handing the run its last close had claimed to the next execution; no execution's
  // history went far past the suggestion (a one-turn run's events, about 20, past it at most).
  expect(chain.length).toBeGreaterThan(1);
  expect(chain.filter((execution) => execution.handover).length).toBeGreaterThan(0);
  for (const execution of chain) expect(execution.length).toBeLessThan(SUGGEST_AFTER_EVENTS + 25);
}, 90_000);
