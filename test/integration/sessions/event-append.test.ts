import { startApi, type TestApi } from '../../support/harness';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession, type NewEvent } from '../../../src/store/events';
import { createSession, tenantWithAgent } from './support';

/**
 * What appendEvents' callers rely on: input order, consecutive seqs, strictly increasing
 * created_at, idempotency by key (an existing event comes back, nothing is inserted twice).
 */
let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

async function newSession() {
  const { client, agent } = await tenantWithAgent(api);
  return (await createSession(client, agent.id)).id as string;
}
const append = (sessionId: string, events: NewEvent[]) =>
  withTransaction(api.deps.db, async (client) => {
    await lockSession(client, sessionId);
    return appendEvents(client, sessionId, events);
  });
const note = (text: string, extra: Partial<NewEvent> = {}): NewEvent => ({ type: 'system.message', content: [{ type: 'text', text }], ...extra });

test('a batch is appended in input order with consecutive seqs and increasing created_at', async () => {
  const sessionId = await newSession();
  const [first] = await append(sessionId, [note('first')]);
  const rows = await append(sessionId, [note('a'), note('b', { processed: true, run_id: 'run_x' }), note('c', { attributes: { stop_reason: 'end_turn' } })]);

  expect(rows.map((row) => (row.content[0] as { text: string }).text)).toEqual(['a', 'b', 'c']);
  expect(rows.map((row) => Number(row.seq))).toEqual([Number(first!.seq) + 1, Number(first!.seq) + 2, Number(first!.seq) + 3]);
  // created_at strictly increases (compared in Postgres: a JS Date drops the microseconds).
  const { rows: stored } = await api.deps.db.query<{ id: string; later: boolean | null }>(
    'SELECT id, created_at > lag(created_at) OVER (ORDER BY seq) AS later FROM session_events WHERE session_id = $1 ORDER BY seq',
    [sessionId],
  );
  expect(stored.map((row) => row.id)).toEqual([first!.id, ...rows.map((row) => row.id)]);
  expect(stored.map((row) => row.later)).toEqual([null, true, true, true]);
  expect(rows[0]!.processed_at).toBeNull();
  expect(rows[1]!.processed_at).toEqual(rows[1]!.created_at);
  expect(rows[1]!.run_id).toBe('run_x');
  expect(rows[2]!.attributes).toEqual({ stop_reason: 'end_turn' });
});

test('events whose idempotency key was appended come back as they were; only the new ones are inserted', async () => {
  const sessionId = await newSession();
  const [original] = await append(sessionId, [note('once', { idempotency_key: 'k1' })]);
  const again = await append(sessionId, [note('new before'), note('once, retried', { idempotency_key: 'k1' }), note('new after', { idempotency_key: 'k2' })]);

  expect(again[1]).toEqual(original);
  expect(again.map((row) => (row.content[0] as { text: string }).text)).toEqual(['new before', 'once', 'new after']);
  expect([Number(again[0]!.seq), Number(again[2]!.seq)]).toEqual([Number(original!.seq) + 1, Number(original!.seq) + 2]);

  // A full retry inserts nothing and leaves the session's sequence alone.
  const retried = await append(sessionId, [note('once', { idempotency_key: 'k1' }), note('new after', { idempotency_key: 'k2' })]);
  expect(retried).toEqual([original, again[2]]);
  const { rows } = await api.deps.db.query<{ count: string; event_seq: string }>(
    'SELECT (SELECT count(*) FROM session_events WHERE session_id = $1) AS count, (SELECT event_seq FROM sessions WHERE id = $1) AS event_seq',
    [sessionId],
  );
  expect(Number(rows[0]!.count)).toBe(3);
  expect(Number(rows[0]!.event_seq)).toBe(Number(again[2]!.seq));
});

test('an empty batch appends nothing', async () => {
  const sessionId = await newSession();
  expect(await append(sessionId, [])).toEqual([]);
});
