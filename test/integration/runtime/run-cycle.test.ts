import { createActivities } from '../../../activities';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession } from '../../../src/store/events';
import { recordBrokenAttempt } from '../../../src/store/attempt-usage';
import { startApi, type TestApi } from '../../support/harness';
import { createTenant, type Tenant } from '../../support/factories';
import { createAgentAndSession, text } from '../../support/runtime';

/**
 * The bookkeeping activities on their own (no workflow): Temporal retries an activity
 * whose result it did not receive, so running one twice with the same input must change
 * nothing the second time and answer the same.
 */
let api: TestApi;
let tenant: Tenant;
let activities: ReturnType<typeof createActivities>;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db, { credits: 100n });
  activities = createActivities(api.deps);
});
afterAll(() => api.close());

/** Appends events as the api does: under the session's row lock. */
const appendAsApi = (sessionId: string, events: Parameters<typeof appendEvents>[2]) =>
  withTransaction(api.deps.db, async (client) => {
    await lockSession(client, sessionId);
    await appendEvents(client, sessionId, events);
  });
const userMessage = (sessionId: string, words: string) => appendAsApi(sessionId, [{ type: 'user.message', content: text(words) }]);
const types = async (sessionId: string) =>
  (await api.deps.db.query<{ type: string }>('SELECT type FROM session_events WHERE session_id = $1 ORDER BY seq', [sessionId])).rows.map((row) => row.type);
/** A model turn of the run as the turn activity records it (the close bills what the log holds). */
const recordTurn = (sessionId: string, runId: string, turn = 1) =>
  appendAsApi(sessionId, [
    {
      type: 'session.turn_usage',
      content: [{ turn, model: 'openai/gpt-4o-mini', input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, reasoning_tokens: 0, total_tokens: 15, credits_nano: 1234 }],
      attributes: { stop: 'end_turn', context_tokens: 15 },
      run_id: runId,
      idempotency_key: `${runId}:turn:${turn}:usage`,
      processed: true,
    },
  ]);

test('startRunCycle claims a waiting message once; a retry returns the same claim', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  expect(await activities.startRunCycle({ sessionId, cycleKey: 'c0' })).toEqual({ kind: 'none' });

  await userMessage(sessionId, 'hello');
  const claim = await activities.startRunCycle({ sessionId, cycleKey: 'c1' });
  expect(claim).toMatchObject({ kind: 'start', cycleKey: 'c1', model: 'openai/gpt-4o-mini' });
  expect(await activities.startRunCycle({ sessionId, cycleKey: 'c1' })).toEqual(claim);
  // A different cycle finds nothing new to claim: the message was consumed.
  expect(await activities.startRunCycle({ sessionId, cycleKey: 'c2' })).toEqual({ kind: 'none' });

  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running']);
  const { rows } = await api.deps.db.query('SELECT status, active_run_id FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0]).toEqual({ status: 'running', active_run_id: (claim as { runId: string }).runId });
});

test('finishRunCycle closes a run and claims the next message in one transaction; a retry bills nothing twice', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'first');
  const first = (await activities.startRunCycle({ sessionId, cycleKey: 'a1' })) as { runId: string };
  await userMessage(sessionId, 'second, sent during the first run');
  const balance = async () => BigInt((await api.deps.db.query('SELECT balance_nano FROM project_credits WHERE project_id = $1', [tenant.projectId])).rows[0].balance_nano);
  const before = await balance();

  await recordTurn(sessionId, first.runId);
  const finish = { sessionId, runId: first.runId, cycleKey: 'a1', contextTokens: 15, stopReason: 'end_turn' as const, endRun: true, claimCycleKey: 'a2' };
  const next = await activities.finishRunCycle(finish);
  expect(next).toMatchObject({ kind: 'start', cycleKey: 'a2' });
  expect((next as { runId: string }).runId).not.toBe(first.runId);
  expect(await activities.finishRunCycle(finish)).toEqual(next);

  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running', 'user.message', 'session.turn_usage', 'session.status_idle', 'session.status_running']);
  expect(before - (await balance())).toBe(1234n);
  const { rows } = await api.deps.db.query(
    `SELECT s.status, s.active_run_id, s.credits_nano::int AS credits,
            (SELECT count(*)::int FROM usage_records u WHERE u.request_id = $2) AS usage_rows
       FROM sessions s WHERE s.id = $1`,
    [sessionId, first.runId],
  );
  expect(rows[0]).toEqual({ status: 'running', active_run_id: (next as { runId: string }).runId, credits: 1234, usage_rows: 1 });
});

test("a broken call is recorded only while its run holds the session, and billed once by the run's close", async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'hello');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'w1' })) as { runId: string };
  const broken = { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, credits_nano: 500, reasoning_tokens: 0 };
  await recordBrokenAttempt(api.deps.db, sessionId, run.runId, `${run.runId}:turn:1:x:1:attempt:1`, broken);
  await recordBrokenAttempt(api.deps.db, sessionId, run.runId, `${run.runId}:turn:1:x:1:attempt:1`, broken); // a retried write
  await recordTurn(sessionId, run.runId);
  const finish = { sessionId, runId: run.runId, cycleKey: 'w1', contextTokens: 15, stopReason: 'end_turn' as const, endRun: true };
  await activities.finishRunCycle(finish);
  await activities.finishRunCycle(finish);
  const { rows } = await api.deps.db.query(`SELECT usage FROM session_events WHERE session_id = $1 AND type = 'session.status_idle'`, [sessionId]);
  expect(rows).toHaveLength(1);
  expect(rows[0].usage.credits_nano).toBe(1234 + 500);
  expect((await api.deps.db.query('SELECT 1 FROM run_attempt_usage WHERE run_id = $1', [run.runId])).rowCount).toBe(0);
  // The run has ended: a call that breaks now is not parked where no close would bill it.
  await recordBrokenAttempt(api.deps.db, sessionId, run.runId, `${run.runId}:turn:2:x:1:attempt:1`, broken);
  expect((await api.deps.db.query('SELECT 1 FROM run_attempt_usage WHERE run_id = $1', [run.runId])).rowCount).toBe(0);
});

test('finishRunCycle with nothing waiting leaves the session idle and claims nothing', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'only');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'b1' })) as { runId: string };
  const next = await activities.finishRunCycle({ sessionId, runId: run.runId, cycleKey: 'b1', contextTokens: 15, stopReason: 'end_turn', endRun: true, claimCycleKey: 'b2' });
  expect(next).toEqual({ kind: 'none' });
  const { rows } = await api.deps.db.query('SELECT status, active_run_id FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0]).toEqual({ status: 'idle', active_run_id: null });
});

test('a retried claim of a run whose agent cannot run reports the toolset problem again', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId, {
    tools: [{ type: 'custom', name: 'broken', input_schema: { type: 'object', properties: 5 } }],
  });
  await userMessage(sessionId, 'hello');
  const first = await activities.startRunCycle({ sessionId, cycleKey: 'd1' });
  expect(first).toMatchObject({ kind: 'start', toolsetError: 'invalid_tool_schema' });
  expect(await activities.startRunCycle({ sessionId, cycleKey: 'd1' })).toEqual(first);
});

test('a started run is orphaned only by a claim of another execution: never by a late claim of its own', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'claimed by execution A');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'o1', holding: null, execution: 'exec-A' })) as { runId: string };
  expect(run).toMatchObject({ kind: 'start' });

  // A claim attempt of execution A itself that ran late (between runs as far as it knew):
  // the run is A's, in flight, so nothing is closed and nothing is claimed.
  await userMessage(sessionId, 'waits for the run in flight');
  expect(await activities.startRunCycle({ sessionId, cycleKey: 'o2', holding: null, execution: 'exec-A' })).toEqual({ kind: 'none' });
  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running', 'user.message']);

  // Execution B (A was reset away) holds no run: A's run is closed as run_interrupted, then
  // the waiting message starts B's own run.
  const next = await activities.startRunCycle({ sessionId, cycleKey: 'o3', holding: null, execution: 'exec-B' });
  expect(next).toMatchObject({ kind: 'start' });
  expect((next as { runId: string }).runId).not.toBe(run.runId);
  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running', 'user.message', 'session.error', 'session.status_running']);
  const { rows } = await api.deps.db.query(
    `SELECT content->0->>'code' AS code FROM session_events WHERE session_id = $1 AND run_id = $2 AND type = 'session.error'`,
    [sessionId, run.runId],
  );
  expect(rows).toEqual([{ code: 'run_interrupted' }]);
});

test('a pause closing after its run was interrupted ends the run user_cancelled, its calls cancelled', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'look it up');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'p1', holding: null, execution: 'exec-A' })) as { runId: string };
  // The api accepted an interrupt while the turn's server tools still ran (stamped with the run).
  await appendAsApi(sessionId, [{ type: 'user.interrupt', content: [], run_id: run.runId }]);

  // A message queued behind the run: the close that ends the run claims it at once, so no
  // moment passes in which no run holds the session (an interrupt then would find none).
  await appendAsApi(sessionId, [{ type: 'user.message', content: text('queued'), run_id: 'run_queued' }]);

  const pause = { sessionId, runId: run.runId, cycleKey: 'p1', contextTokens: 15, stopReason: 'client_tool_use' as const, toolCalls: [{ id: 'toolu_1', name: 'lookup' }], endRun: false, claimCycleKey: 'p1-next', execution: 'exec-A' };
  const next = await activities.finishRunCycle(pause);
  expect(next).toMatchObject({ kind: 'start', runId: 'run_queued', cycleKey: 'p1-next' });
  expect(await activities.finishRunCycle(pause)).toEqual(next); // a retry answers the same
  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running', 'user.interrupt', 'user.message', 'user.tool_result', 'session.status_idle', 'session.status_running']);
  const { rows: events } = await api.deps.db.query(
    `SELECT type, attributes, content, processed_at IS NOT NULL AS processed FROM session_events
      WHERE session_id = $1 AND type IN ('user.interrupt', 'user.tool_result', 'session.status_idle') ORDER BY seq`,
    [sessionId],
  );
  expect(events[0]).toMatchObject({ type: 'user.interrupt', processed: true });
  expect(events[1].content[0]).toMatchObject({ tool_use_id: 'toolu_1', is_error: true, error_code: 'cancelled' });
  expect(events[2].attributes).toEqual({ stop_reason: 'user_cancelled', context_tokens: 15 });
  const { rows } = await api.deps.db.query('SELECT status, active_run_id, pending_tool_use_ids, cancelled_tool_use_ids FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0]).toEqual({ status: 'running', active_run_id: 'run_queued', pending_tool_use_ids: [], cancelled_tool_use_ids: ['toolu_1'] });
});

test("a run interrupted while the turn asking for tools was in flight: its calls the log holds no result for are cancelled before the closing event", async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'use the tools');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'u1', holding: null, execution: 'exec-A' })) as { runId: string };
  // The turn answered before the cancellation reached it: it recorded its calls (a server tool that
  // never ran, a client tool the run never paused for) and its usage, stopping for tool use.
  await appendAsApi(sessionId, [
    { type: 'agent.tool_use', content: [{ type: 'tool_use', id: 'toolu_server', name: 'e', input: {} }, { type: 'tool_use', id: 'toolu_client', name: 'ct', input: {} }], run_id: run.runId, processed: true },
    {
      type: 'session.turn_usage',
      content: [{ turn: 1, model: 'openai/gpt-4o-mini', input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, reasoning_tokens: 0, total_tokens: 15, credits_nano: 1234 }],
      attributes: { stop: 'tool_use', context_tokens: 15 },
      run_id: run.runId,
      idempotency_key: `${run.runId}:turn:1:usage`,
      processed: true,
    },
  ]);
  // The workflow, interrupted, ends the run without the turn's calls.
  const finish = { sessionId, runId: run.runId, cycleKey: 'u1', contextTokens: 15, stopReason: 'user_cancelled' as const, endRun: true, claimCycleKey: 'u2', execution: 'exec-A' };
  expect(await activities.finishRunCycle(finish)).toEqual({ kind: 'none' });
  expect(await activities.finishRunCycle(finish)).toEqual({ kind: 'none' }); // a retry adds nothing
  expect(await types(sessionId)).toEqual(['user.message', 'session.status_running', 'agent.tool_use', 'session.turn_usage', 'user.tool_result', 'user.tool_result', 'session.status_idle']);
  const { rows: results } = await api.deps.db.query(`SELECT content FROM session_events WHERE session_id = $1 AND type = 'user.tool_result' ORDER BY seq`, [sessionId]);
  expect(results.flatMap((row) => row.content).map((block: { tool_use_id: string; error_code: string }) => [block.tool_use_id, block.error_code])).toEqual([
    ['toolu_server', 'cancelled'],
    ['toolu_client', 'cancelled'],
  ]);
  const { rows } = await api.deps.db.query('SELECT status, cancelled_tool_use_ids FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0]).toEqual({ status: 'idle', cancelled_tool_use_ids: ['toolu_server', 'toolu_client'] });
});

test('a pause closed by workflow code that does not take a claim back pauses as before', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'look it up');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'q1', holding: null, execution: 'exec-A' })) as { runId: string };
  await appendAsApi(sessionId, [{ type: 'user.interrupt', content: [], run_id: run.runId }]);
  const pause = { sessionId, runId: run.runId, cycleKey: 'q1', contextTokens: 15, stopReason: 'client_tool_use' as const, toolCalls: [{ id: 'toolu_2', name: 'lookup' }], endRun: false };
  expect(await activities.finishRunCycle(pause)).toBeUndefined();
  const { rows } = await api.deps.db.query('SELECT active_run_id, pending_tool_use_ids FROM sessions WHERE id = $1', [sessionId]);
  expect(rows[0]).toEqual({ active_run_id: run.runId, pending_tool_use_ids: ['toolu_2'] });
  // Its interrupt close then ends the run.
  expect(await activities.finishRunCycle({ ...pause, cycleKey: 'q2', stopReason: 'user_cancelled', toolCalls: undefined, endRun: true, claimCycleKey: 'q3' })).toEqual({ kind: 'none' });
  expect((await types(sessionId)).filter((type) => type === 'session.status_idle')).toHaveLength(2);
});

test('a retried pause close changes nothing, even with an interrupt accepted since the first attempt', async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'look it up');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 'r1', holding: null, execution: 'exec-A' })) as { runId: string };
  const pause = { sessionId, runId: run.runId, cycleKey: 'r1', contextTokens: 15, stopReason: 'client_tool_use' as const, toolCalls: [{ id: 'toolu_9', name: 'lookup' }], endRun: false, claimCycleKey: 'r1-next' };
  expect(await activities.finishRunCycle(pause)).toBeUndefined();
  await appendAsApi(sessionId, [{ type: 'user.interrupt', content: [], run_id: run.runId }]);
  const before = await types(sessionId);

  // The local activity ran again (its workflow task failed after the transaction committed).
  expect(await activities.finishRunCycle(pause)).toBeUndefined();
  expect(await types(sessionId)).toEqual(before);
  const { rows } = await api.deps.db.query(
    `SELECT (SELECT processed_at IS NULL FROM session_events WHERE session_id = $1 AND type = 'user.interrupt') AS interrupt_waiting, pending_tool_use_ids, active_run_id FROM sessions WHERE id = $1`,
    [sessionId],
  );
  expect(rows[0]).toEqual({ interrupt_waiting: true, pending_tool_use_ids: ['toolu_9'], active_run_id: run.runId });
});

test("a resumption takes its tool results only: a system.message sent during the run waits for the next run", async () => {
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  await userMessage(sessionId, 'look it up');
  const run = (await activities.startRunCycle({ sessionId, cycleKey: 's1', holding: null, execution: 'exec-A' })) as { runId: string };
  // Sent while the run is in flight (no user.message with it: the api names no run for it).
  await appendAsApi(sessionId, [{ type: 'system.message', content: text('for the next run') }]);
  await activities.finishRunCycle({ sessionId, runId: run.runId, cycleKey: 's1', contextTokens: 15, stopReason: 'client_tool_use', toolCalls: [{ id: 'toolu_s', name: 'lookup' }], endRun: false, claimCycleKey: 's1-next' });
  // The client's result, as the api records it.
  await withTransaction(api.deps.db, async (client) => {
    await lockSession(client, sessionId);
    await appendEvents(client, sessionId, [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: 'toolu_s', content: 'found' }], run_id: run.runId }]);
    await client.query(`UPDATE sessions SET pending_tool_use_ids = '[]' WHERE id = $1`, [sessionId]);
  });

  expect(await activities.startRunCycle({ sessionId, cycleKey: 's2', holding: run.runId, execution: 'exec-A' })).toMatchObject({ kind: 'resume', runId: run.runId });
  const { rows } = await api.deps.db.query(
    `SELECT type, processed_at IS NOT NULL AS processed FROM session_events WHERE session_id = $1 AND type IN ('system.message', 'user.tool_result') ORDER BY seq`,
    [sessionId],
  );
  expect(rows).toEqual([
    { type: 'system.message', processed: false },
    { type: 'user.tool_result', processed: true },
  ]);
});
