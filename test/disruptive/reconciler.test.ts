import { startApi, type TestApi } from '../support/harness';
import { startTestSimulator, type Simulator } from '../support/simulator';
import { LazyTemporalClient, terminateRunningOnQueue } from '../../src/temporal/client';
import { signalSession } from '../../src/temporal/session-signals';
import { allEvents, httpTenant, ONE_TURN_RUN, postMessage, spawnWorker, waitForClosing, workerEnv, type WorkerProcess } from './support';

/**
 * The api commits a user.message but cannot signal Temporal (here: it points at a port
 * nothing listens on, as if Temporal were unreachable or the api crashed after the commit).
 * The worker's reconciler finds the unprocessed event and signals the session: the run
 * completes, exactly once, even when more signals for it arrive later.
 */
let api: TestApi;
let simulator: Simulator;
let worker: WorkerProcess | undefined;
let temporal: LazyTemporalClient;

beforeAll(async () => {
  simulator = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: simulator.url, TEMPORAL_ADDRESS: '127.0.0.1:1' });
  temporal = new LazyTemporalClient({ address: '127.0.0.1:7233', namespace: api.deps.config.TEMPORAL_NAMESPACE });
});
afterAll(async () => {
  await worker?.kill();
  if (temporal && api) await terminateRunningOnQueue(await temporal.get(), api.deps.config.TEMPORAL_TASK_QUEUE, 'test finished');
  await temporal?.close();
  await api?.close();
  await simulator?.close();
});

test('a message committed while Temporal is unreachable is picked up by the reconciler and runs exactly once', async () => {
  const { client, agentId, tenant, newSession } = await httpTenant(api);
  const sessionId = await newSession();

  const [message] = await postMessage(client, sessionId, 'committed but never signalled'); // accepted: the commit is what counts
  expect(api.logs.some((line) => line.includes('session signal failed after commit') && line.includes(sessionId))).toBe(true);
  const unprocessed = await api.deps.db.query('SELECT processed_at FROM session_events WHERE id = $1', [message!.id]);
  expect(unprocessed.rows[0].processed_at).toBeNull();
  await new Promise((r) => setTimeout(r, 1500));
  expect((await allEvents(client, sessionId)).map((e) => e.type)).toEqual(['user.message']); // nothing ran it

  // A worker whose reconciler passes every half second; no api signals anything.
  worker = await spawnWorker(workerEnv(api.deps.config, { RECONCILE_INTERVAL_MS: '500' }));
  const done = await waitForClosing(client, sessionId, 1, 90_000);
  expect(done.map((e) => e.type)).toEqual(ONE_TURN_RUN);
  // The pass logs once it has signalled every session it found (other tests' too), which can be after our run ended.
  const logged = () => worker!.output.some((line) => line.includes('reconciler re-signalled sessions'));
  for (const deadline = Date.now() + 30_000; !logged() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 200));
  expect(logged()).toBe(true);

  // Late signals (more reconciler passes, a recovered api signalling after all) change nothing.
  await signalSession({ ...api.deps, temporal }, { id: sessionId, project_id: tenant.projectId, agent_id: agentId });
  await new Promise((r) => setTimeout(r, 3000));
  const final = await allEvents(client, sessionId);
  expect(final.map((e) => e.type)).toEqual(ONE_TURN_RUN);
  expect(final[0]!.id).toBe(message!.id);
  expect(final.at(-1)!.stop_reason).toBe('end_turn');
  const processed = await api.deps.db.query('SELECT processed_at FROM session_events WHERE id = $1', [message!.id]);
  expect(processed.rows[0].processed_at).not.toBeNull();
  const runs = simulator.requests.filter((r) => JSON.stringify(r.body).includes('committed but never signalled'));
  expect(runs).toHaveLength(1);
});

test('an interrupt whose signal was lost still cancels its run: the run does not consume it, the reconciler resends it', async () => {
  const { client, agentId, tenant, newSession } = await httpTenant(api);
  const sessionId = await newSession();
  await postMessage(client, sessionId, '[[delay:30000]] interrupted without a signal'); // claims run R; the signal fails
  const interrupt = await client.post(`/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.interrupt', content: [] }] });
  expect(interrupt.status).toBe(200); // names run R; its signal fails too
  worker ??= await spawnWorker(workerEnv(api.deps.config, { RECONCILE_INTERVAL_MS: '500' }));
  // The message's signal gets through at once (as if only the interrupt's had been lost): the
  // workflow starts R well before the reconciler looks at the interrupt (it waits 2 s).
  const started = Date.now();
  await signalSession({ ...api.deps, temporal }, { id: sessionId, project_id: tenant.projectId, agent_id: agentId });
  const events = await waitForClosing(client, sessionId, 1, 60_000);
  expect(events.at(-1)!.stop_reason).toBe('user_cancelled');
  expect(Date.now() - started).toBeLessThan(25_000); // not the 30 s model call running to its end
  // The run consumed the interrupt that ended it.
  const row = await api.deps.db.query(`SELECT processed_at FROM session_events WHERE session_id = $1 AND type = 'user.interrupt'`, [sessionId]);
  expect(row.rows[0].processed_at).not.toBeNull();
});
