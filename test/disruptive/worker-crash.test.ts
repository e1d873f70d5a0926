import { startApi, type TestApi } from '../support/harness';
import { startTestSimulator, type Simulator } from '../support/simulator';
import { getBalanceNano } from '../../src/billing/credits';
import { allEvents, httpTenant, ONE_TURN_RUN, postMessage, spawnWorker, terminateQueueWorkflows, waitForClosing, workerEnv, type WorkerProcess } from './support';

/**
 * A worker process dies (SIGKILL, no graceful shutdown) while its model call is in flight.
 * Temporal notices the missing heartbeats, retries the activity on a new worker process, and
 * the run finishes with exactly the events of a normal run: none missing, none twice, billed once.
 */
let api: TestApi;
let simulator: Simulator;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  simulator = await startTestSimulator();
  // The reconciler plays no part here; a long interval keeps it from touching other tests' sessions.
  api = await startApi({ SIMULATOR_URL: simulator.url });
});
afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await terminateQueueWorkflows(api);
  await api?.close();
  await simulator?.close();
});

test('killing the worker process mid model call: a new worker finishes the run, no event lost or duplicated', async () => {
  const env = workerEnv(api.deps.config, { RECONCILE_INTERVAL_MS: '3600000' });
  const first = await spawnWorker(env);
  workers.push(first);
  const { client, tenant, newSession } = await httpTenant(api);
  const sessionId = await newSession();
  const before = await getBalanceNano(api.deps.db, tenant.projectId);

  const [message] = await postMessage(client, sessionId, '[[delay:4000]] survive a crash');
  const chat = () => simulator.requests.filter((r) => r.path.endsWith('/chat/completions') && JSON.stringify(r.body).includes('survive a crash'));
  // The model call is in flight: the simulator holds the request and the run has started.
  const deadline = Date.now() + 60_000;
  while (chat().length === 0) {
    if (Date.now() > deadline) throw new Error(`the model call never started; worker output:\n${first.output.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  expect((await allEvents(client, sessionId)).map((e) => e.type)).toEqual(['user.message', 'session.status_running']);

  await first.kill();
  await new Promise((r) => setTimeout(r, 300));
  expect(chat()[0]!.aborted).toBe(true); // the upstream request died with the process
  expect(chat()[0]!.finished).toBe(false);

  const second = await spawnWorker(env);
  workers.push(second);
  const events = await waitForClosing(client, sessionId, 1, 150_000);
  // Let anything late (a duplicate append by a retried activity) land before judging the log.
  await new Promise((r) => setTimeout(r, 1500));
  const final = await allEvents(client, sessionId);

  expect(final.map((e) => e.type)).toEqual(ONE_TURN_RUN);
  expect(final).toHaveLength(events.length);
  expect(new Set(final.map((e) => e.id)).size).toBe(final.length);
  expect(final[0]!.id).toBe(message!.id);
  const idle = final.at(-1)!;
  expect(idle.stop_reason).toBe('end_turn');
  expect(final.find((e) => e.type === 'agent.message')!.content).toEqual([{ type: 'text', text: 'You said: survive a crash' }]);
  // The retried call reached the model again, and only its answer was recorded.
  expect(chat().length).toBe(2);
  expect(chat()[1]!.finished).toBe(true);

  // Billed exactly once: one usage row for the run, the balance moved by the closing event's credits.
  const turn = final.find((e) => e.type === 'session.turn_usage')!.content[0];
  expect(idle.usage.credits_nano).toBe(turn.credits_nano);
  expect(before - (await getBalanceNano(api.deps.db, tenant.projectId))).toBe(BigInt(idle.usage.credits_nano));
  const rows = await api.deps.db.query("SELECT count(*)::int AS n FROM usage_records WHERE project_id = $1 AND operation = 'agent_run'", [tenant.projectId]);
  expect(rows.rows[0].n).toBe(1);
  const session = (await client.get(`/v1/sessions/${sessionId}`)).body;
  expect(session.status).toBe('idle');
});
