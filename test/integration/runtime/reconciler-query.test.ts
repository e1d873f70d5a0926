import { startApi, type TestApi } from '../../support/harness';
import { createTenant } from '../../support/factories';
import { createAgentAndSession } from '../../support/runtime';
import { interruptsToReconcile, sessionsToReconcile } from '../../../src/temporal/reconciler';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession } from '../../../src/store/events';

/** Which unprocessed events make the reconciler re-signal a session (the crash recovery itself: test/disruptive). */
let api: TestApi;
const created: string[] = [];
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  // The test database outlives the run: leave nothing that later reconciler passes (or later
  // runs of this test, all dated the same) would keep finding.
  await api?.deps.db.query('UPDATE session_events SET processed_at = now() WHERE session_id = ANY($1) AND processed_at IS NULL', [created]);
  await api?.close();
});

/** A session holding one unprocessed event, dated long ago so it heads the reconciler's oldest-first list. */
async function sessionWaiting(type: 'user.message' | 'user.tool_result' | 'user.interrupt', activeRunId: string | null, eventRunId: string | null = null): Promise<string> {
  const tenant = await createTenant(api.deps.db);
  const { sessionId } = await createAgentAndSession(api.deps, tenant.projectId);
  const content =
    type === 'user.message' ? [{ type: 'text', text: 'hello' }] : type === 'user.tool_result' ? [{ type: 'tool_result', tool_use_id: 'toolu_late', content: 'done' }] : [];
  await withTransaction(api.deps.db, async (client) => {
    await lockSession(client, sessionId);
    await appendEvents(client, sessionId, [{ type, content, run_id: eventRunId }]);
  });
  await api.deps.db.query(`UPDATE session_events SET created_at = '2001-01-01' WHERE session_id = $1`, [sessionId]);
  await api.deps.db.query('UPDATE sessions SET active_run_id = $2 WHERE id = $1', [sessionId, activeRunId]);
  created.push(sessionId);
  return sessionId;
}

test('an unprocessed message, or a tool result its paused run waits for, is re-signalled; a tool result that came after its run ended is not', async () => {
  const message = await sessionWaiting('user.message', null);
  const resumable = await sessionWaiting('user.tool_result', 'run_paused');
  const orphan = await sessionWaiting('user.tool_result', null);
  const found = new Set((await sessionsToReconcile(api.deps.db, 0)).map((session) => session.id));
  expect(found.has(message)).toBe(true);
  expect(found.has(resumable)).toBe(true);
  expect(found.has(orphan)).toBe(false); // the next message's run will read it
});

test('an interrupt whose run still holds the session is re-sent with that run; one whose run has ended is not', async () => {
  const pending = await sessionWaiting('user.interrupt', 'run_inflight', 'run_inflight');
  const ended = await sessionWaiting('user.interrupt', null, 'run_done');
  const found = new Map((await interruptsToReconcile(api.deps.db, 0)).map(({ session, runId }) => [session.id, runId]));
  expect(found.get(pending)).toBe('run_inflight');
  expect(found.has(ended)).toBe(false);
});
