import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { createAgentAndSession, listEvents, sendEvents, text, useRuntimeEnv, waitForEvent } from '../../support/runtime';
import { sessionWorkflowId } from '../../../src/temporal/names';

/**
 * README "Operating runs": an operator resets a session's workflow with `temporal workflow
 * reset` to a point inside a run the log has already ended, or terminates it mid-run. The log
 * is what happened: a reset adds nothing to it, and the session keeps working.
 */
const env = useRuntimeEnv();

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

async function history(sessionId: string): Promise<HistoryEvent[]> {
  const client = await env.api.deps.temporal.get();
  return (await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory()).events ?? [];
}

/** The local activity a marker records (its type), or undefined for other events. */
function localActivityType(event: HistoryEvent): string | undefined {
  const marker = event.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return undefined;
  return JSON.parse(Buffer.from(marker.details!['data']!.payloads![0]!.data as Uint8Array).toString()).activity_type;
}

/** `temporal workflow reset --event-id N`: a new execution re-runs the workflow from that workflow task. */
async function resetTo(sessionId: string, workflowTaskFinishEventId: number): Promise<void> {
  const client = await env.api.deps.temporal.get();
  await client.workflowService.resetWorkflowExecution({
    namespace: env.api.deps.config.TEMPORAL_NAMESPACE,
    workflowExecution: { workflowId: sessionWorkflowId(sessionId) },
    reason: 'test: operator reset',
    workflowTaskFinishEventId: workflowTaskFinishEventId as never,
    requestId: randomUUID(),
  });
}

const logShape = async (sessionId: string) => (await listEvents(env.api.deps, sessionId)).map((e) => `${e.type}${e.stop_reason ? `:${e.stop_reason}` : ''}${e.error_code ? `:${e.error_code}` : ''}`);

test('reset to inside a client-tool pause of a run that has since ended: nothing is added, and the next message runs', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId, {
    tools: [{ name: 'lookup', description: 'looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  });
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {"q":"x"}]]') }]);
  const { events } = await waitForEvent(env.api.deps, session.sessionId, 'closing');
  const callId = events.find((e) => e.type === 'agent.tool_use')!.content[0].id;
  await sendEvents(env.api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: callId, content: 'found' }] }]);
  await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  const before = await logShape(session.sessionId);
  expect(before.at(-1)).toBe('session.status_idle:end_turn');

  // The workflow task that closed the pause (its first finishRunCycle).
  const pauseClose = (await history(session.sessionId)).find((e) => localActivityType(e) === 'finishRunCycle')!;
  await resetTo(session.sessionId, Number(pauseClose.markerRecordedEventAttributes!.workflowTaskCompletedEventId));
  await new Promise((r) => setTimeout(r, 1000));
  expect(await logShape(session.sessionId)).toEqual(before);

  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('after the reset') }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 3);
  expect(event.stop_reason).toBe('end_turn');
  expect(await logShape(session.sessionId)).toEqual([...before, 'user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle:end_turn']);
});

test('reset to before a later turn of a run that failed: that turn is not run again, nothing follows its session.error, the next message runs', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  // Turn 1 calls the echo tool; turn 2 (which brings its result) fails.
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"first"}]] [[then-error:400]]') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'closing');
  const before = await logShape(session.sessionId);
  expect(before.at(-1)).toBe('session.error:upstream_error');
  const requests = env.simulator.requests.length;

  // The workflow task that scheduled the failed second turn.
  const turns = (await history(session.sessionId)).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
  expect(turns).toHaveLength(2);
  await resetTo(session.sessionId, Number(turns[1]!.activityTaskScheduledEventAttributes!.workflowTaskCompletedEventId));
  await new Promise((r) => setTimeout(r, 1500));
  expect(await logShape(session.sessionId)).toEqual(before);
  expect(env.simulator.requests.length).toBe(requests); // the ended run's turn was not sent to the model again

  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('after the reset') }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  expect(event.stop_reason).toBe('end_turn');
});

test('reset to before the claim of a run in flight: the run, whose execution the reset ended, closes run_interrupted, and the next message runs', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId);
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('first') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'closing');
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[delay:2500]] slow') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'session.status_running', 2);

  // The workflow task that claimed the second run (`temporal workflow reset --type LastWorkflowTask` picks it).
  const claims = (await history(session.sessionId)).filter((e) => localActivityType(e) === 'startRunCycle');
  expect(claims).toHaveLength(2);
  await resetTo(session.sessionId, Number(claims[1]!.markerRecordedEventAttributes!.workflowTaskCompletedEventId));
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  expect(event.error_code).toBe('run_interrupted');
  await new Promise((r) => setTimeout(r, 3000)); // the ended execution's model call finishes meanwhile

  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('after the reset') }]);
  const next = await waitForEvent(env.api.deps, session.sessionId, 'closing', 3);
  expect(next.event.stop_reason).toBe('end_turn');
  const shape = await logShape(session.sessionId);
  expect(shape.slice(5)).toEqual([
    'user.message',
    'session.status_running',
    'session.error:run_interrupted',
    'user.message',
    'session.status_running',
    'agent.message',
    'session.turn_usage',
    'session.status_idle:end_turn',
  ]);
  const status = (await env.api.deps.db.query('SELECT status FROM sessions WHERE id = $1', [session.sessionId])).rows[0].status;
  expect(status).toBe('idle');
});

test('a workflow terminated mid-run: the next message closes that run as run_interrupted and runs', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId);
  // (The next run reads this message too, in the same user turn: a short delay keeps it quick.)
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[delay:2000]] never finished') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'session.status_running');
  const client = await env.api.deps.temporal.get();
  await client.workflow.getHandle(sessionWorkflowId(session.sessionId)).terminate('operator: test');

  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('hello again') }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  expect(event.stop_reason).toBe('end_turn');
  expect(await logShape(session.sessionId)).toEqual([
    'user.message',
    'session.status_running',
    'user.message',
    'session.error:run_interrupted',
    'session.status_running',
    'agent.message',
    'session.turn_usage',
    'session.status_idle:end_turn',
  ]);
});

test('terminated mid-run, then interrupted: the interrupt ends the orphaned run user_cancelled', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId);
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[delay:2000]] cancel me') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'session.status_running');
  await (await env.api.deps.temporal.get()).workflow.getHandle(sessionWorkflowId(session.sessionId)).terminate('operator: test');
  // The interrupt's signal starts a fresh execution, whose first claim closes the run.
  await sendEvents(env.api.deps, session, [{ type: 'user.interrupt', content: [] }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing');
  expect({ type: event.type, stop_reason: event.stop_reason }).toEqual({ type: 'session.status_idle', stop_reason: 'user_cancelled' });
});

test('terminated after a billed turn: the orphaned run is closed with that turn\'s usage, and debited', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId, { tools: [{ type: 'echo', name: 'say' }] });
  // Turn 1 calls the echo tool; turn 2 takes 3 s, during which the workflow is terminated.
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[tool:say {"message":"one"}]] [[then-delay:3000]]') }]);
  await waitForEvent(env.api.deps, session.sessionId, 'user.tool_result');
  await new Promise((r) => setTimeout(r, 300));
  await (await env.api.deps.temporal.get()).workflow.getHandle(sessionWorkflowId(session.sessionId)).terminate('operator: test');
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('next') }]);
  const { event, events } = await waitForEvent(env.api.deps, session.sessionId, 'closing');
  expect(event.error_code).toBe('run_interrupted');
  const orphanTurns = events.slice(0, events.indexOf(event)).filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0].credits_nano);
  expect(orphanTurns).toHaveLength(1);
  expect(event.usage.credits_nano).toBe(orphanTurns[0]);
  const runId = (await env.api.deps.db.query('SELECT run_id FROM session_events WHERE id = $1', [event.id])).rows[0].run_id;
  const { rows } = await env.api.deps.db.query('SELECT credits_nano::bigint AS credits FROM usage_records WHERE request_id = $1', [runId]);
  expect(rows.map((r) => Number(r.credits))).toEqual([orphanTurns[0]]);
});

test('terminated while paused, then interrupted: the orphaned run ends user_cancelled with the context_tokens of its latest turn', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId, {
    tools: [{ name: 'lookup', description: 'looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  });
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {"q":"x"}]]') }]);
  const { event: pause, events } = await waitForEvent(env.api.deps, session.sessionId, 'closing');
  expect(pause.context_tokens).toBe(events.find((e) => e.type === 'session.turn_usage')!.content[0].total_tokens);
  await (await env.api.deps.temporal.get()).workflow.getHandle(sessionWorkflowId(session.sessionId)).terminate('operator: test');
  await sendEvents(env.api.deps, session, [{ type: 'user.interrupt', content: [] }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  expect({ type: event.type, stop_reason: event.stop_reason, context_tokens: event.context_tokens }).toEqual({ type: 'session.status_idle', stop_reason: 'user_cancelled', context_tokens: pause.context_tokens });
  expect(pause.context_tokens).toBeGreaterThan(0);
});

test('terminated while paused for a client tool: its result arrives, and the run is closed run_interrupted; the next message runs', async () => {
  const session = await createAgentAndSession(env.api.deps, env.tenant.projectId, {
    tools: [{ name: 'lookup', description: 'looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  });
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('[[tool:lookup {"q":"x"}]]') }]);
  const { events } = await waitForEvent(env.api.deps, session.sessionId, 'closing');
  const callId = events.find((e) => e.type === 'agent.tool_use')!.content[0].id;
  await (await env.api.deps.temporal.get()).workflow.getHandle(sessionWorkflowId(session.sessionId)).terminate('operator: test');
  await sendEvents(env.api.deps, session, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: callId, content: 'found' }] }]);
  const { event } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 2);
  expect(event.error_code).toBe('run_interrupted');
  await sendEvents(env.api.deps, session, [{ type: 'user.message', content: text('and now?') }]);
  const { event: next } = await waitForEvent(env.api.deps, session.sessionId, 'closing', 3);
  expect(next.stop_reason).toBe('end_turn');
});
