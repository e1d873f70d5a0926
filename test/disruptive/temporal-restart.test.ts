import { startApi, type TestApi } from '../support/harness';
import { startTestSimulator, type Simulator } from '../support/simulator';
import { allEvents, httpTenant, ONE_TURN_RUN, postMessage, services, spawnWorker, terminateQueueWorkflows, waitForClosing, workerEnv, type WorkerProcess } from './support';

/**
 * The Temporal dev server stops and starts again between two runs of a session. The same
 * worker process and the same api carry on: the session's workflow survives in the server's
 * database, and the next message runs.
 */
let api: TestApi;
let simulator: Simulator;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  simulator = await startTestSimulator();
  api = await startApi({ SIMULATOR_URL: simulator.url });
});
afterAll(async () => {
  services('start', 'temporal'); // always leave the shared service running
  await worker?.kill();
  await terminateQueueWorkflows(api);
  await api?.close();
  await simulator?.close();
});

test('after a Temporal restart between two runs, the next message still runs', async () => {
  worker = await spawnWorker(workerEnv(api.deps.config, { RECONCILE_INTERVAL_MS: '3600000' }));
  const { client, newSession } = await httpTenant(api);
  const sessionId = await newSession();

  await postMessage(client, sessionId, 'before the restart');
  expect((await waitForClosing(client, sessionId, 1, 60_000)).map((e) => e.type)).toEqual(ONE_TURN_RUN);

  services('stop', 'temporal');
  try {
    // The script only sends the signal: wait until the server is really gone.
    let ready: { status: number; body: any } = { status: 0, body: null };
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
      const response = await fetch(`${api.url}/readyz`);
      ready = { status: response.status, body: await response.json() };
      if (ready.status === 503) break;
    }
    expect(ready).toMatchObject({ status: 503, body: { services: { temporal: 'down' } } });
    // A rename signals the workflow while holding the session's row: with Temporal down it
    // gives up within its deadline instead of holding the row for the client's retries.
    const renameStarted = Date.now();
    const renamed = await client.patch(`/v1/sessions/${sessionId}`, { title: 'renamed during the outage' });
    expect(renamed.status).toBe(200);
    expect(Date.now() - renameStarted).toBeLessThan(6_000);
  } finally {
    services('start', 'temporal');
  }

  await postMessage(client, sessionId, 'after the restart');
  await waitForClosing(client, sessionId, 2, 120_000);
  await new Promise((r) => setTimeout(r, 1000));
  const events = await allEvents(client, sessionId);
  expect(events.map((e) => e.type)).toEqual([...ONE_TURN_RUN, ...ONE_TURN_RUN]);
  expect(events.at(-1)!.stop_reason).toBe('end_turn');
  expect(events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text)).toEqual(['You said: before the restart', 'You said: after the restart']);
  // Both runs belong to one workflow execution (it survived the restart), not a fresh start.
  const history = await (await api.deps.temporal.get()).workflow.getHandle(`session/${sessionId}`).fetchHistory();
  const started = (history.events ?? []).filter((e) => e.workflowExecutionStartedEventAttributes);
  expect(started).toHaveLength(1);
  expect((history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(2);
});
