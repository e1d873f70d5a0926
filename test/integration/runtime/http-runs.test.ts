import { apiCaller, useRuntimeEnv } from '../../support/runtime';
import { reconcileDeletedSessions } from '../../../src/temporal/reconciler';
import { withTransaction } from '../../../src/store/db';
import { appendEvents } from '../../../src/store/events';
import { newId } from '../../../src/store/ids';

/**
 * The whole path as an API client sees it: agents, sessions and events over HTTP, the
 * real workflow and worker behind them, replies read back from the event log.
 */
const env = useRuntimeEnv();

const call = apiCaller(env);

async function newSession(tools: unknown[] = []) {
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'http agent', model: 'anthropic/claude-haiku-4-5', tools });
  expect(agent.status).toBe(201);
  const session = await call('POST', '/v1/sessions', { agent: agent.body.id, title: 'over http' });
  expect(session.status).toBe(201);
  return session.body.id as string;
}

const send = (sessionId: string, events: unknown[]) => call('POST', `/v1/sessions/${sessionId}/events`, { events });

/** Polls GET events (as documented for clients) until `count` closing events exist. */
async function waitForClosing(sessionId: string, count = 1): Promise<Array<Record<string, any>>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { body } = await call('GET', `/v1/sessions/${sessionId}/events?limit=100`);
    const events = body.data as Array<Record<string, any>>;
    if (events.filter((e) => e.type === 'session.status_idle' || e.type === 'session.error').length >= count) return events;
    if (Date.now() > deadline) throw new Error(`no reply: ${JSON.stringify(events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a message sent over HTTP gets its reply in the event log; the session shows status and cumulative usage', async () => {
  const sessionId = await newSession();
  const sent = await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'hello over http' }] }]);
  expect(sent.status).toBe(200);
  expect(sent.body.data.map((e: { type: string }) => e.type)).toEqual(['user.message']);
  const events = await waitForClosing(sessionId);
  expect(events.map((e) => e.type)).toEqual(['user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle']);
  const idle = events.at(-1)!;
  const session = await call('GET', `/v1/sessions/${sessionId}`);
  expect(session.body.status).toBe('idle');
  expect(session.body.usage.credits_nano).toBe(idle.usage.credits_nano);
  expect(session.body.usage.input_tokens).toBe(idle.usage.input_tokens);
});

test('an interrupt sent while the run holds the session ends it user_cancelled, also when the model answered first', async () => {
  // The model answers in 600 ms, before a heartbeat can carry the cancellation to the call.
  const sessionId = await newSession();
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[delay:600]] quick one' }] }])).status).toBe(200);
  for (const deadline = Date.now() + 10_000; (await call('GET', `/v1/sessions/${sessionId}`)).body.status !== 'running'; ) {
    if (Date.now() > deadline) throw new Error('the run never started');
    await new Promise((r) => setTimeout(r, 20));
  }
  expect((await send(sessionId, [{ type: 'user.interrupt' }])).status).toBe(200);
  const events = await waitForClosing(sessionId);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'user_cancelled' });
  // The run consumed the interrupt that ended it.
  expect(events.find((e) => e.type === 'user.interrupt')!.processed_at).not.toBeNull();
  // A turn the cancelled call still recorded is billed with the run (the close bills what the log holds).
  const turns = events.filter((e) => e.type === 'session.turn_usage').map((e) => e.content[0].credits_nano as number);
  expect(events.at(-1)!.usage.credits_nano).toBe(turns.reduce((sum, credits) => sum + credits, 0));
});

test('an interrupt sent while no run is in flight has no effect: no later run consumes it', async () => {
  const sessionId = await newSession();
  expect((await send(sessionId, [{ type: 'user.interrupt' }])).status).toBe(200);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'after an idle interrupt' }] }]);
  const events = await waitForClosing(sessionId);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  expect(events.find((e) => e.type === 'user.interrupt')!.processed_at).toBeNull();
});

test('deleting a session while its run is in flight: the run is interrupted, and the session stays terminated', async () => {
  const sessionId = await newSession();
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[delay:1500]] slow' }] }]);
  // The workflow has claimed the run (the session's status says running from the moment the api accepts the message).
  const started = async () => (await env.api.deps.db.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND type = 'session.status_running'`, [sessionId])).rowCount;
  for (const deadline = Date.now() + 10_000; !(await started()); ) {
    if (Date.now() > deadline) throw new Error('the run never started');
    await new Promise((r) => setTimeout(r, 20));
  }
  const deleted = await fetch(`${env.api.url}/v1/sessions/${sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${env.tenant.key}` } });
  expect(deleted.status).toBe(204);
  for (const deadline = Date.now() + 15_000; ; ) {
    const closing = await env.api.deps.db.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND type IN ('session.status_idle', 'session.error')`, [sessionId]);
    if (closing.rowCount) break;
    if (Date.now() > deadline) throw new Error(`the run never closed: ${JSON.stringify((await env.api.deps.db.query('SELECT type, run_id FROM session_events WHERE session_id = $1 ORDER BY seq', [sessionId])).rows)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const { rows } = await env.api.deps.db.query('SELECT status FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0].status).toBe('terminated');
  // Its workflow is done too: a deleted session gets no more events.
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
});

test('a run whose model answers before the delete\'s cancellation reaches it still ends user_cancelled, its turn kept and billed', async () => {
  const sessionId = await newSession();
  // The model answers in 400 ms; the call learns of a cancellation at its heartbeat, once a second.
  const marker = `quick-${sessionId}`;
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: `[[delay:400]] ${marker}` }] }]);
  const events = async () => (await env.api.deps.db.query(`SELECT type, attributes FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId])).rows;
  // Deleted once the model call is under way (the provider has the request).
  for (const deadline = Date.now() + 10_000; !env.simulator.requests.some((r) => JSON.stringify(r.body).includes(marker)); ) {
    if (Date.now() > deadline) throw new Error('the model was never called');
    await new Promise((r) => setTimeout(r, 10));
  }
  expect((await fetch(`${env.api.url}/v1/sessions/${sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${env.tenant.key}` } })).status).toBe(204);
  for (const deadline = Date.now() + 15_000; !(await events()).some((e) => e.type === 'session.status_idle' || e.type === 'session.error'); ) {
    if (Date.now() > deadline) throw new Error('the run never closed');
    await new Promise((r) => setTimeout(r, 50));
  }
  const log = await events();
  expect(log.map((e) => e.type)).toEqual(['user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle']);
  expect(log.at(-1)!.attributes.stop_reason).toBe('user_cancelled');
});

test('a session deleted before its workflow claimed the message\'s run: that run ends user_cancelled, with no model call', async () => {
  const sessionId = await newSession();
  // The message is in the log and its run named (as the api does), but no signal went out yet.
  const runId = newId('run');
  await withTransaction(env.api.deps.db, async (client) => {
    await appendEvents(client, sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'never answered' }], run_id: runId }]);
    await client.query(`UPDATE sessions SET active_run_id = $2, status = 'running' WHERE id = $1`, [sessionId, runId]);
  });
  const calls = env.simulator.requests.length;
  expect((await fetch(`${env.api.url}/v1/sessions/${sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${env.tenant.key}` } })).status).toBe(204);
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
  const { rows } = await env.api.deps.db.query(`SELECT type, attributes->>'stop_reason' AS stop_reason FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId]);
  expect(rows).toEqual([{ type: 'user.message', stop_reason: null }, { type: 'session.status_idle', stop_reason: 'user_cancelled' }]);
  expect(env.simulator.requests.length).toBe(calls);
});

test('deleting an idle session ends its workflow', async () => {
  const sessionId = await newSession();
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }]);
  await waitForClosing(sessionId);
  const deleted = await fetch(`${env.api.url}/v1/sessions/${sessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${env.tenant.key}` } });
  expect(deleted.status).toBe(204);
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
});

test("a deleted session whose delete signal was lost: the reconciler ends its workflow; one that never ran is recorded without a signal", async () => {
  const ran = await newSession();
  await send(ran, [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }]);
  await waitForClosing(ran);
  const never = await newSession();
  // Deleted with Temporal unreachable: the rows say deleted, no signal went out.
  await env.api.deps.db.query(`UPDATE sessions SET deleted_at = now() - interval '2 minutes', status = 'terminated' WHERE id = ANY($1)`, [[ran, never]]);
  const ended = async () => (await env.api.deps.db.query('SELECT id FROM sessions WHERE id = ANY($1) AND workflow_ended_at IS NOT NULL ORDER BY id', [[ran, never]])).rows.map((r) => r.id);
  expect(await ended()).toEqual([]);
  const handle = (await env.api.deps.temporal.get()).workflow.getHandle(`session/${ran}`);
  expect((await handle.describe()).status.name).toBe('RUNNING');

  expect(await reconcileDeletedSessions(env.api.deps)).toBeGreaterThanOrEqual(1);
  expect(await workflowEnds(ran)).toBe('COMPLETED');
  expect(await ended()).toEqual([ran, never].sort());
  // Nothing is left to wake: a later pass signals neither again.
  const signals = async () => (await handle.fetchHistory()).events!.filter((e) => e.workflowExecutionSignaledEventAttributes).length;
  const before = await signals();
  await reconcileDeletedSessions(env.api.deps);
  expect(await signals()).toBe(before);
});

test('a session deleted while its run is in flight and the interrupt is lost: the run stops at its next step, user_cancelled', async () => {
  const sessionId = await newSession([{ type: 'echo', name: 'say' }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:say {"message":"x"}]] [[repeat:6]] [[then-delay:400]]' }] }]);
  for (const deadline = Date.now() + 10_000; (await env.api.deps.db.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND type = 'session.turn_usage'`, [sessionId])).rowCount === 0; ) {
    if (Date.now() > deadline) throw new Error('no turn');
    await new Promise((r) => setTimeout(r, 20));
  }
  // Deleted with Temporal unreachable: no interrupt reached the workflow.
  await env.api.deps.db.query(`UPDATE sessions SET deleted_at = now(), status = 'terminated' WHERE id = $1`, [sessionId]);
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
  const { rows } = await env.api.deps.db.query(`SELECT type, error_code, attributes->>'stop_reason' AS stop_reason FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId]);
  // The delete cancelled the run, as an interrupt would have.
  expect(rows.at(-1)).toEqual({ type: 'session.status_idle', error_code: null, stop_reason: 'user_cancelled' });
  expect(rows.filter((r) => r.type === 'session.turn_usage').length).toBeLessThan(7);
  expect((await env.api.deps.db.query('SELECT workflow_ended_at IS NOT NULL AS ended FROM sessions WHERE id = $1', [sessionId])).rows[0].ended).toBe(true);
});

test('a session deleted while paused for client tools, the interrupt lost: the reconciler interrupts the run and the workflow ends', async () => {
  const sessionId = await newSession([{ name: 'ct', description: 'client tool', input_schema: { type: 'object' } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:ct {}]]' }] }]);
  await waitForClosing(sessionId);
  await env.api.deps.db.query(`UPDATE sessions SET deleted_at = now() - interval '2 minutes', status = 'terminated' WHERE id = $1`, [sessionId]);
  expect(await reconcileDeletedSessions(env.api.deps)).toBeGreaterThanOrEqual(1);
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
  const { rows } = await env.api.deps.db.query(`SELECT type FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId]);
  expect(rows.slice(-2).map((r) => r.type)).toEqual(['user.tool_result', 'session.status_idle']);
  expect((await env.api.deps.db.query('SELECT workflow_ended_at IS NOT NULL AS ended FROM sessions WHERE id = $1', [sessionId])).rows[0].ended).toBe(true);
});

test("a session deleted after its workflow was terminated mid-run: the reconciler's new execution closes the orphaned run, billed, and ends", async () => {
  const sessionId = await newSession();
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'first' }] }]);
  await waitForClosing(sessionId);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[delay:2000]] slow' }] }]);
  for (const deadline = Date.now() + 10_000; (await env.api.deps.db.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND type = 'session.status_running'`, [sessionId])).rowCount! < 2; ) {
    if (Date.now() > deadline) throw new Error('the second run never started');
    await new Promise((r) => setTimeout(r, 20));
  }
  const handle = (await env.api.deps.temporal.get()).workflow.getHandle(`session/${sessionId}`);
  await handle.terminate('operator');
  await env.api.deps.db.query(`UPDATE sessions SET deleted_at = now() - interval '2 minutes', status = 'terminated' WHERE id = $1`, [sessionId]);
  expect(await reconcileDeletedSessions(env.api.deps)).toBeGreaterThanOrEqual(1);
  expect(await workflowEnds(sessionId)).toBe('COMPLETED');
  const { rows } = await env.api.deps.db.query(`SELECT type, error_code, usage FROM session_events WHERE session_id = $1 AND type IN ('session.status_idle', 'session.error') ORDER BY seq`, [sessionId]);
  expect(rows.map((r) => [r.type, r.error_code])).toEqual([['session.status_idle', null], ['session.error', 'run_interrupted']]);
  const session = (await env.api.deps.db.query('SELECT active_run_id, workflow_ended_at IS NOT NULL AS ended, credits_nano::bigint AS credits FROM sessions WHERE id = $1', [sessionId])).rows[0];
  expect(session).toMatchObject({ active_run_id: null, ended: true });
  expect(Number(session.credits)).toBe(rows.reduce((sum, r) => sum + r.usage.credits_nano, 0));
});

/** The session workflow's status once it is no longer running (or RUNNING after 10 s). */
async function workflowEnds(sessionId: string): Promise<string> {
  const handle = (await env.api.deps.temporal.get()).workflow.getHandle(`session/${sessionId}`);
  let status = (await handle.describe()).status.name;
  for (const deadline = Date.now() + 10_000; status === 'RUNNING' && Date.now() < deadline; status = (await handle.describe()).status.name) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

test('a message sent while a run is in flight gets its own run, also when that run pauses and resumes first', async () => {
  const sessionId = await newSession([{ name: 'ct', description: 'client tool', input_schema: { type: 'object', properties: { x: { type: 'number' } } } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'first [[delay:800]] [[tool:ct {"x":1}]]' }] }]);
  await new Promise((r) => setTimeout(r, 200));
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'queued question [[tokens:7]]' }] }])).status).toBe(200);
  const paused = await waitForClosing(sessionId);
  const callId = paused.find((e) => e.type === 'agent.tool_use')!.content[0].id;
  expect((await send(sessionId, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: callId, content: 'ok' }] }])).status).toBe(200);
  const events = await waitForClosing(sessionId, 3);
  const closings = events.filter((e) => e.type === 'session.status_idle').map((e) => e.stop_reason);
  expect(closings).toEqual(['client_tool_use', 'end_turn', 'end_turn']);
  const replies = events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text);
  expect(replies).toEqual(['Tool results: ok', 'lorem ipsum dolor sit amet consectetur adipiscing']);
  // The queued message's run saw the conversation in the order it took place: it comes last.
  const third = env.simulator.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
  expect(third.messages.at(-1)!.role).toBe('user');
  expect(JSON.stringify(third.messages.at(-1)!.content)).toContain('queued question');
  expect(JSON.stringify(third.messages.slice(0, -1))).not.toContain('queued question');
});

test('pause rules end to end: message while paused is 400, interrupt ends the pause, the next message cancels the outstanding call, its late result is 409', async () => {
  const sessionId = await newSession([{ name: 'lookup', description: 'looks up', input_schema: { type: 'object' } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:lookup {"q":1}]]' }] }]);
  const paused = await waitForClosing(sessionId);
  const idle = paused.at(-1)!;
  expect(idle.stop_reason).toBe('client_tool_use');
  const toolUseId = idle.tool_use_ids[0];

  const whilePaused = await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'are you there?' }] }]);
  expect(whilePaused.status).toBe(400);

  expect((await send(sessionId, [{ type: 'user.interrupt' }])).status).toBe(200);
  const interrupted = await waitForClosing(sessionId, 2);
  expect(interrupted.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'user_cancelled' });

  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'start over' }] }])).status).toBe(200);
  const after = await waitForClosing(sessionId, 3);
  const synthetic = after.find((e) => e.type === 'user.tool_result');
  if (!synthetic) throw new Error(JSON.stringify(after.map((e) => [e.type, e.stop_reason ?? e.error_code ?? ''])));
  expect(synthetic.content[0]).toMatchObject({ tool_use_id: toolUseId, is_error: true, error_code: 'cancelled' });
  expect(after.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });

  const late = await send(sessionId, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'too late' }] }]);
  expect(late.status).toBe(409);
});

test('a tool result sent after the interrupt of its paused run is refused (409), as a cancelled call', async () => {
  const sessionId = await newSession([{ name: 'lookup', description: 'looks up', input_schema: { type: 'object' } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:lookup {"q":3}]]' }] }]);
  const toolUseId = (await waitForClosing(sessionId)).at(-1)!.tool_use_ids[0];
  // Sent back to back: the run may not have closed yet when the result comes.
  expect((await send(sessionId, [{ type: 'user.interrupt' }])).status).toBe(200);
  const late = await send(sessionId, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'after the interrupt' }] }]);
  expect(late.status).toBe(409);
  expect(late.body.error.message).toMatch(/already cancelled/);
  // Sent at once too, while the interrupted run may still be closing: accepted, it waits for its own run.
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'next' }] }])).status).toBe(200);

  // The run's end answered the call as cancelled, once; the next message ran.
  const events = await waitForClosing(sessionId, 3);
  expect(events.filter((e) => e.type === 'session.status_idle').map((e) => e.stop_reason)).toEqual(['client_tool_use', 'user_cancelled', 'end_turn']);
  expect(events.filter((e) => e.type === 'user.tool_result').map((e) => e.content[0])).toEqual([expect.objectContaining({ tool_use_id: toolUseId, error_code: 'cancelled' })]);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
});

test('a message queued behind a run that pauses and is then interrupted: its run sees the cancelled result right after the call', async () => {
  const sessionId = await newSession([{ name: 'ask', description: 'asks the user', input_schema: { type: 'object' } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[delay:1000]] [[tool:ask {}]]' }] }]);
  // Sent while the first run is in flight: it waits for its own run.
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'queued behind' }] }])).status).toBe(200);
  const paused = (await waitForClosing(sessionId)).at(-1)!;
  expect(paused.stop_reason).toBe('client_tool_use');
  const toolUseId = paused.tool_use_ids[0];
  expect((await send(sessionId, [{ type: 'user.interrupt' }])).status).toBe(200);

  const events = await waitForClosing(sessionId, 3);
  expect(events.filter((e) => e.type === 'session.status_idle').map((e) => e.stop_reason)).toEqual(['client_tool_use', 'user_cancelled', 'end_turn']);
  const cancelled = events.filter((e) => e.type === 'user.tool_result');
  expect(cancelled.map((e) => e.content[0])).toEqual([expect.objectContaining({ tool_use_id: toolUseId, is_error: true, error_code: 'cancelled', content: expect.stringContaining('its run ended') })]);
  // The queued message's run: in its request, the call is answered before the queued message.
  const request = env.simulator.requests.filter((r) => JSON.stringify(r.body).includes('queued behind')).at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
  const callAt = request.messages.findIndex((m) => JSON.stringify(m.content).includes(`"tool_use","id":"${toolUseId}"`) || JSON.stringify(m.content).includes(`"id":"${toolUseId}"`));
  expect(callAt).toBeGreaterThanOrEqual(0);
  expect(JSON.stringify(request.messages[callAt + 1]!.content)).toContain(`"tool_use_id":"${toolUseId}"`);
  expect(JSON.stringify(request.messages.slice(callAt + 1))).toContain('queued behind');
});

test('messages sent back to back, or at once, each get a run and a reply of their own', async () => {
  const sessionId = await newSession();
  for (const text of ['one', 'two']) expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text }] }])).status).toBe(200);
  await Promise.all(['three', 'four'].map(async (text) => expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text }] }])).status).toBe(200)));
  const events = await waitForClosing(sessionId, 4);
  expect(events.filter((e) => e.type === 'session.status_idle').map((e) => e.stop_reason)).toEqual(['end_turn', 'end_turn', 'end_turn', 'end_turn']);
  expect(events.filter((e) => e.type === 'session.status_running')).toHaveLength(4);
  // Each run answered its own message, in the order they were accepted.
  const replies = events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text as string);
  expect(replies).toHaveLength(4);
  expect(replies[0]).toMatch(/one/);
  expect(replies[0]).not.toMatch(/two/);
  expect(replies[1]).toMatch(/two/);
});

test('tool results sent over HTTP resume the paused run', async () => {
  const sessionId = await newSession([{ name: 'lookup', input_schema: { type: 'object' } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:lookup {"q":2}]]' }] }]);
  const idle = (await waitForClosing(sessionId)).at(-1)!;
  const result = await send(sessionId, [
    { type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: idle.tool_use_ids[0], content: 'found it', traceparent: idle.tool_traceparents[idle.tool_use_ids[0]] }] },
  ]);
  expect(result.status).toBe(200);
  const events = await waitForClosing(sessionId, 2);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  expect(events.find((e) => e.type === 'user.tool_result')!.content[0]).not.toHaveProperty('traceparent');
});

test('reasoning becomes a leading thought block with thinking_ms, shown only with include_thinking=true', async () => {
  const sessionId = await newSession();
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[think]] ponder this' }] }]);
  await waitForClosing(sessionId);
  const plain = (await call('GET', `/v1/sessions/${sessionId}/events`)).body.data.find((e: { type: string }) => e.type === 'agent.message');
  expect(plain.content.map((b: { type: string }) => b.type)).toEqual(['text']);
  const thinking = (await call('GET', `/v1/sessions/${sessionId}/events?include_thinking=true`)).body.data.find((e: { type: string }) => e.type === 'agent.message');
  expect(thinking.content.map((b: { type: string }) => b.type)).toEqual(['thought', 'text']);
  expect(thinking.content[0]).toMatchObject({ text: expect.stringContaining('ponder'), extra_content: { gateway: { thinking_ms: expect.any(Number) } } });
});

test("a run's usage row carries the reasoning tokens its turns reported; the closing event's usage has only the spec's fields", async () => {
  // Gemini reports thought tokens apart (thoughtsTokenCount); the runtime must not drop them on the way to analytics.
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'thinking agent', model: 'google/gemini-2.5-flash' });
  const sessionId = (await call('POST', '/v1/sessions', { agent: agent.body.id })).body.id as string;
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[think]] ponder this' }] }]);
  const events = await waitForClosing(sessionId);
  const turn = events.find((e) => e.type === 'session.turn_usage')!.content[0];
  expect(turn.reasoning_tokens).toBeGreaterThan(0);
  const idle = events.at(-1)!;
  expect(Object.keys(idle.usage).sort()).toEqual(['cache_creation_input_tokens', 'cache_read_input_tokens', 'credits_nano', 'input_tokens', 'output_tokens']);
  const { rows } = await env.api.deps.db.query(
    `SELECT u.reasoning_tokens::int, u.output_tokens::int, u.credits_nano::bigint AS credits FROM usage_records u
      WHERE u.request_id = (SELECT run_id FROM session_events WHERE id = $1)`,
    [idle.id],
  );
  expect(rows).toEqual([{ reasoning_tokens: turn.reasoning_tokens, output_tokens: turn.output_tokens, credits: String(idle.usage.credits_nano) }]);
});

test("an agent run on Gemini sends each call's thought signature back with it on the next turn (kept out of the event log)", async () => {
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'gemini agent', model: 'google/gemini-2.5-flash', reasoning_effort: 'low', tools: [{ type: 'echo', name: 'say' }] });
  expect(agent.status).toBe(201);
  const sessionId = (await call('POST', '/v1/sessions', { agent: agent.body.id })).body.id as string;
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[think]] [[tool:say {"message":"hi"}]]' }] }]);
  const events = await waitForClosing(sessionId);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  const toolUse = events.find((e) => e.type === 'agent.tool_use')!;
  expect(JSON.stringify(toolUse)).not.toContain('sim-sig-');
  const second = env.simulator.requests.filter((r) => r.path.includes('gemini-2.5-flash')).at(-1)!.body as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> };
  const modelTurn = second.contents.find((c) => c.role === 'model')!;
  expect(modelTurn.parts.find((p) => p.functionCall)).toMatchObject({ thoughtSignature: expect.stringMatching(/^sim-sig-/) });
});

test("an agent run on Anthropic sends its turn's signed thinking back in the tool loop, so thinking stays on (kept out of the event log)", async () => {
  const agent = await call('POST', '/v1/agents', { project_id: env.tenant.projectId, name: 'claude agent', model: 'anthropic/claude-sonnet-4-5', reasoning_effort: 'high', tools: [{ type: 'echo', name: 'say' }] });
  expect(agent.status).toBe(201);
  const sessionId = (await call('POST', '/v1/sessions', { agent: agent.body.id })).body.id as string;
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[think]] [[tool:say {"message":"signed"}]]' }] }]);
  const events = await waitForClosing(sessionId);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  const listed = (await call('GET', `/v1/sessions/${sessionId}/events?include_thinking=true`)).body.data;
  expect(JSON.stringify(listed)).not.toContain('signature');
  const requests = env.simulator.requests.filter((r) => r.path.endsWith('/messages') && JSON.stringify(r.body).includes('signed'));
  expect(requests).toHaveLength(2);
  const second = requests[1]!.body as { thinking?: { type: string }; messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
  expect(second.thinking).toMatchObject({ type: 'enabled' });
  const assistant = second.messages.find((m) => m.role === 'assistant')!;
  expect(assistant.content[0]).toMatchObject({ type: 'thinking', thinking: expect.stringContaining('Thinking about'), signature: expect.any(String) });
  expect(assistant.content.at(-1)).toMatchObject({ type: 'tool_use' });
});

test('a turn that only thought before calling a tool: its agent.message is listed (and streamed) only with include_thinking=true', async () => {
  const sessionId = await newSession([{ name: 'lookup', description: 'looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }]);
  await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[think]] [[tool:lookup {"q":"x"}]]' }] }]);
  await waitForClosing(sessionId);
  const types = async (query: string) => (await call('GET', `/v1/sessions/${sessionId}/events${query}`)).body.data.map((e: { type: string }) => e.type);
  expect(await types('')).toEqual(['user.message', 'session.status_running', 'agent.tool_use', 'session.turn_usage', 'session.status_idle']);
  expect(await types('?include_thinking=true')).toEqual(['user.message', 'session.status_running', 'agent.message', 'agent.tool_use', 'session.turn_usage', 'session.status_idle']);
  // Pages count only what they show: a two-event page still holds two events.
  const page = (await call('GET', `/v1/sessions/${sessionId}/events?limit=2&after_id=${(await call('GET', `/v1/sessions/${sessionId}/events`)).body.data[1].id}`)).body;
  expect(page.data.map((e: { type: string }) => e.type)).toEqual(['agent.tool_use', 'session.turn_usage']);
});

test('a NUL or an unpaired surrogate the model writes (a tool input, a reply echoing a text document) is stored as U+FFFD; the run ends normally', async () => {
  const sessionId = await newSession([{ type: 'echo', name: 'e' }]);
  // The directive's JSON escapes become a real U+0000 and a lone surrogate in the model's tool call (the client's text has neither).
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: '[[tool:e {"message":"a\\u0000b\\ud800c"}]]' }] }])).status).toBe(200);
  const events = await waitForClosing(sessionId);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  expect(events.find((e) => e.type === 'agent.tool_use')!.content[0].input).toEqual({ message: 'a\ufffdb\ufffdc' });
  expect(JSON.stringify(events.find((e) => e.type === 'user.tool_result')!.content)).toContain('a\ufffdb\ufffdc');

  const document = { type: 'document', source: { type: 'base64', media_type: 'text/plain', data: Buffer.from('ab\0cd').toString('base64') } };
  expect((await send(sessionId, [{ type: 'user.message', content: [document, { type: 'text', text: 'read this' }] }])).status).toBe(200);
  const after = await waitForClosing(sessionId, 2);
  expect(after.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  // And the session keeps working.
  expect((await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'still there?' }] }])).status).toBe(200);
  expect((await waitForClosing(sessionId, 3)).at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
});

test('a text file in the charset its media type names reaches the model as that text', async () => {
  const sessionId = await newSession();
  const data = Buffer.from('café naïve', 'latin1').toString('base64');
  const document = { type: 'document', source: { type: 'base64', media_type: 'text/plain; charset=iso-8859-1', data }, title: 'notes' };
  expect((await send(sessionId, [{ type: 'user.message', content: [document, { type: 'text', text: 'read this' }] }])).status).toBe(200);
  expect((await waitForClosing(sessionId)).at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
  const sent = env.simulator.requests.filter((r) => JSON.stringify(r.body).includes('read this')).at(-1)!.body as { messages: Array<{ content: unknown }> };
  expect(sent.messages.at(-1)!.content).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'document', source: expect.objectContaining({ type: 'text', data: 'café naïve' }) })]));
});

test("Postgres unavailable while a turn's answer is written (a restart): the write waits for it, the model is called once", async () => {
  const sessionId = await newSession();
  const name = `outage_${sessionId.toLowerCase()}`;
  // The first two attempts at writing the turn fail as a Postgres shutting down does (57P01).
  await env.api.deps.db.query(`CREATE SEQUENCE ${name}`);
  await env.api.deps.db.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF nextval('${name}') <= 2 THEN RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01'; END IF; RETURN NEW; END $$`,
  );
  await env.api.deps.db.query(`CREATE TRIGGER ${name} BEFORE INSERT ON session_events FOR EACH ROW WHEN (NEW.session_id = '${sessionId}' AND NEW.type = 'agent.message') EXECUTE FUNCTION ${name}()`);
  try {
    const marker = `written-late-${sessionId}`;
    await send(sessionId, [{ type: 'user.message', content: [{ type: 'text', text: marker }] }]);
    const events = await waitForClosing(sessionId);
    expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: 'end_turn' });
    expect(events.filter((e) => e.type === 'agent.message')).toHaveLength(1);
    expect(env.simulator.requests.filter((r) => JSON.stringify(r.body).includes(marker))).toHaveLength(1);
    const turn = events.find((e) => e.type === 'session.turn_usage')!.content[0];
    expect(events.at(-1)!.usage.credits_nano).toBe(turn.credits_nano);
  } finally {
    await env.api.deps.db.query(`DROP TRIGGER ${name} ON session_events; DROP FUNCTION ${name}(); DROP SEQUENCE ${name}`);
  }
});

test("a turn the model answered but the log refused is still billed: every attempt's call is in the run's closing usage", async () => {
  const [failing, baseline] = [await newSession(), await newSession()];
  // The database refuses this session's agent.message: each attempt of the turn calls the model, then fails.
  const trigger = `refuse_${failing.toLowerCase()}`;
  await env.api.deps.db.query(`CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
  await env.api.deps.db.query(`CREATE TRIGGER ${trigger} BEFORE INSERT ON session_events FOR EACH ROW WHEN (NEW.session_id = '${failing}' AND NEW.type = 'agent.message') EXECUTE FUNCTION ${trigger}()`);
  try {
    const message = [{ type: 'user.message', content: [{ type: 'text', text: 'bill me anyway' }] }];
    await send(baseline, message);
    const oneCall = (await waitForClosing(baseline)).find((e) => e.type === 'session.turn_usage')!.content[0];
    await send(failing, message);
    const closing = (await waitForClosing(failing)).at(-1)!;
    expect(closing).toMatchObject({ type: 'session.error' });
    // The workflow's retry policy makes 4 attempts.
    expect(closing.usage).toMatchObject({ output_tokens: 4 * oneCall.output_tokens, credits_nano: 4 * oneCall.credits_nano });
  } finally {
    await env.api.deps.db.query(`DROP TRIGGER ${trigger} ON session_events; DROP FUNCTION ${trigger}()`);
  }
});
