/**
 * Records the Temporal histories of representative session runs for the replay tests
 * (test/replay/replay.test.ts): plain, client-tool pause and resume, server tool, interrupt,
 * an interrupt that arrives before its run has started (by signal, or found in the log by the
 * run's claim), compaction and an upstream error. Each run goes through the real stack (api over HTTP,
 * a real worker, Temporal, Postgres, the provider simulator in-process) on a private task
 * queue; each session's workflow history is saved as test/replay/histories/<name>.json in
 * Temporal's JSON history format (the same as `temporal workflow show --output json`).
 *
 *   npx tsx scripts/record-history.ts [--suffix=S] [name ...]      (default: every scenario)
 *
 * Needs the services (npm run services). DATABASE_URL defaults to the test database.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { createApp } from '../src/api/app';
import { issueApiKey } from '../src/auth/provisioning';
import { grantCredits, NANO_PER_CREDIT } from '../src/billing/credits';
import { loadConfig } from '../src/config';
import { closeDeps, createDeps, type Deps } from '../src/deps';
import { withTransaction } from '../src/store/db';
import { appendEvents, lockSession } from '../src/store/events';
import { createLogger } from '../src/logger';
import { startSimulator } from '../src/providers/simulator/server';
import { createAccount, createProject } from '../src/store/accounts';
import { migrate } from '../src/store/migrate';
import { sessionWorkflowId } from '../src/temporal/names';
import { createWorker } from '../src/temporal/worker';
import { historyToJson } from '../test/replay/history-json';

const OUT = path.resolve(__dirname, '../test/replay/histories');

type Http = (method: string, path: string, body?: unknown) => Promise<any>;
type Event = { type: string; [key: string]: any };

interface Scenario {
  agent: Record<string, unknown>;
  /** Requests sent while no worker polls, so their signals reach the workflow in one activation. */
  beforeWorker?(http: Http, sessionId: string, deps: Deps): Promise<void>;
  drive(http: Http, sessionId: string): Promise<void>;
  /**
   * Recorded only when named: it needs a Temporal server that suggests continue-as-new early
   * (TEMPORAL_ADDRESS of a dev server started with
   * `--dynamic-config-value limit.historyCount.suggestContinueAsNew=40`). Its history is the
   * session's first execution, the one that continued as new.
   */
  continuesAsNew?: true;
}

const text = (value: string) => [{ type: 'text', text: value }];
const message = (value: string) => ({ events: [{ type: 'user.message', content: text(value) }] });
const closing = (e: Event) => e.type === 'session.status_idle' || e.type === 'session.error';

async function events(http: Http, sessionId: string): Promise<Event[]> {
  return (await http('GET', `/v1/sessions/${sessionId}/events?limit=100`)).data;
}

async function waitFor(http: Http, sessionId: string, done: (log: Event[]) => boolean, timeoutMs = 60_000): Promise<Event[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = await events(http, sessionId);
    if (done(log)) return log;
    if (Date.now() > deadline) throw new Error(`session ${sessionId} did not get there: ${JSON.stringify(log.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const closings = (n: number) => (log: Event[]) => log.filter(closing).length >= n;

// ~2,500 words (~3,750 tokens by the simulator's count): two of them and their echoes overflow gpt-4's 8,192.
const LONG = Array.from({ length: 2500 }, (_, i) => `word${i % 10}`).join(' ');

const SCENARIOS: Record<string, Scenario> = {
  plain: {
    agent: {},
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('hello'));
      await waitFor(http, id, closings(1));
      await http('POST', `/v1/sessions/${id}/events`, message('and again'));
      await waitFor(http, id, closings(2));
    },
  },
  'client-tool-resume': {
    agent: { tools: [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }] },
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[tool:get_weather {"city":"Paris"}]]'));
      const log = await waitFor(http, id, closings(1));
      const call = log.find((e) => e.type === 'agent.tool_use')!.content[0];
      await http('POST', `/v1/sessions/${id}/events`, { events: [{ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }] });
      await waitFor(http, id, closings(2));
    },
  },
  'server-tool': {
    agent: { tools: [{ type: 'echo', name: 'say' }] },
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[tool:say {"message":"ping"}]]'));
      await waitFor(http, id, closings(1));
    },
  },
  interrupt: {
    agent: {},
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[delay:20000]] slow'));
      await waitFor(http, id, (log) => log.some((e) => e.type === 'session.status_running'));
      await new Promise((r) => setTimeout(r, 500));
      await http('POST', `/v1/sessions/${id}/events`, { events: [{ type: 'user.interrupt' }] });
      const log = await waitFor(http, id, closings(1));
      if (log.find(closing)!.stop_reason !== 'user_cancelled') throw new Error(`interrupt did not cancel: ${JSON.stringify(log.at(-1))}`);
    },
  },
  'interrupt-before-start': {
    agent: {},
    // The api claims the run when it accepts the message; the interrupt names that run before the
    // workflow has started it (the `early-interrupt` patch).
    async beforeWorker(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[delay:20000]] never asked'));
      await http('POST', `/v1/sessions/${id}/events`, { events: [{ type: 'user.interrupt' }] });
    },
    async drive(http, id) {
      const log = await waitFor(http, id, closings(1));
      if (log.find(closing)!.stop_reason !== 'user_cancelled') throw new Error(`interrupt did not cancel: ${JSON.stringify(log.at(-1))}`);
    },
  },
  'interrupt-in-log': {
    agent: {},
    // The interrupt is committed naming the claimed run, but its signal never comes: the claim
    // finds it in the log and the run is cancelled before any model call.
    async beforeWorker(http, id, deps) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[delay:20000]] never asked'));
      await withTransaction(deps.db, async (client) => {
        const { active_run_id } = (await lockSession(client, id))!;
        await appendEvents(client, id, [{ type: 'user.interrupt', content: [], run_id: active_run_id }]);
      });
    },
    async drive(http, id) {
      const log = await waitFor(http, id, closings(1));
      if (log.find(closing)!.stop_reason !== 'user_cancelled') throw new Error(`interrupt did not cancel: ${JSON.stringify(log.at(-1))}`);
    },
  },
  compaction: {
    agent: { model: 'openai/gpt-4' },
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message(LONG));
      await waitFor(http, id, closings(1));
      await http('POST', `/v1/sessions/${id}/events`, message('what did I say?'));
      const log = await waitFor(http, id, closings(2));
      if (!log.some((e) => e.type === 'session.compaction')) throw new Error(`no compaction: ${JSON.stringify(log.map((e) => e.type))}`);
    },
  },
  'session-deleted': {
    agent: {},
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('hello'));
      await waitFor(http, id, closings(1));
      await http('DELETE', `/v1/sessions/${id}`);
    },
  },
  'continue-at-run-end': {
    agent: {},
    continuesAsNew: true,
    async drive(http, id) {
      // The first run is slow: the others queue behind it, and the workflow continues as new at
      // a run's end with messages still queued, handing the next run over.
      await http('POST', `/v1/sessions/${id}/events`, message('first [[delay:1500]]'));
      for (let i = 2; i <= 6; i++) await http('POST', `/v1/sessions/${id}/events`, message(`queued ${i}`));
      await waitFor(http, id, closings(6));
    },
  },
  'upstream-error': {
    agent: {},
    async drive(http, id) {
      await http('POST', `/v1/sessions/${id}/events`, message('[[error:400]] fail'));
      const log = await waitFor(http, id, closings(1));
      if (log.find(closing)!.type !== 'session.error') throw new Error('expected session.error');
    },
  },
};

async function main(): Promise<void> {
  // --suffix=S writes <name>S.json, so histories of an earlier workflow version stay next to the new ones.
  const suffix = process.argv.find((arg) => arg.startsWith('--suffix='))?.slice('--suffix='.length) ?? '';
  const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
  const names = args.length > 0 ? args : Object.keys(SCENARIOS).filter((name) => !SCENARIOS[name]!.continuesAsNew);
  for (const name of names) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`);

  const simulator = await startSimulator({ port: 0 });
  const config = loadConfig({
    ...process.env,
    ENVIRONMENT: 'development',
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://gateway:gateway@127.0.0.1:54329/gateway_test',
    SIMULATOR_URL: simulator.url,
    TEMPORAL_TASK_QUEUE: `record-${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'warn',
  });
  const deps = createDeps(config, createLogger({ level: 'warn' }));
  await migrate(deps.db);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const startWorker = async () => {
    const { worker, connection } = await createWorker(deps);
    const running = worker.run();
    return {
      async stop() {
        worker.shutdown();
        await running;
        await connection.close();
      },
    };
  };
  let worker = await startWorker();
  const server: Server = createServer(createApp(deps).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const account = await createAccount(deps.db, 'history recorder');
  const project = await createProject(deps.db, account.id, 'history recorder');
  await grantCredits(deps.db, project.id, 100n * NANO_PER_CREDIT, 'history recorder');
  const { key } = await issueApiKey(deps.db, { projectId: project.id, preset: 'all' });
  const http: Http = async (method, route, body) => {
    const response = await fetch(`${base}${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const payload = response.status === 204 ? undefined : await response.json();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(payload)}`);
    return payload;
  };

  const client = await deps.temporal.get();
  mkdirSync(OUT, { recursive: true });
  try {
    for (const name of names) {
      const scenario = SCENARIOS[name]!;
      const agent = await http('POST', '/v1/agents', { project_id: project.id, name: `replay ${name}`, model: 'openai/gpt-4o-mini', ...scenario.agent });
      const session = await http('POST', '/v1/sessions', { agent: agent.id, title: `replay ${name}` });
      if (scenario.beforeWorker) {
        await worker.stop();
        try {
          await scenario.beforeWorker(http, session.id, deps);
        } finally {
          worker = await startWorker();
        }
      }
      await scenario.drive(http, session.id);
      let handle = client.workflow.getHandle(sessionWorkflowId(session.id));
      if (scenario.continuesAsNew) {
        // Back along the chain to the first execution.
        for (let runId: string | undefined = (await handle.describe()).runId; runId; ) {
          handle = client.workflow.getHandle(sessionWorkflowId(session.id), runId);
          runId = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
        }
      }
      // The workflow idles after the run; wait until its last workflow task has completed.
      let history = await handle.fetchHistory();
      // (A deleted session's workflow completes instead.)
      const last = () => history.events?.at(-1);
      const settled = () => last()?.workflowTaskCompletedEventAttributes || last()?.workflowExecutionCompletedEventAttributes || last()?.workflowExecutionContinuedAsNewEventAttributes;
      for (let i = 0; i < 50 && !settled(); i++) {
        await new Promise((r) => setTimeout(r, 100));
        history = await handle.fetchHistory();
      }
      if (!last()?.workflowExecutionCompletedEventAttributes && !last()?.workflowExecutionContinuedAsNewEventAttributes) await handle.terminate('history recorded');
      if (scenario.continuesAsNew) await client.workflow.getHandle(sessionWorkflowId(session.id)).terminate('history recorded');
      // Worker identities name this machine; they play no part in replay.
      const json = JSON.stringify(historyToJson(history), null, 1).replace(/"identity": "[^"]*"/g, '"identity": "recorder"');
      writeFileSync(path.join(OUT, `${name}${suffix}.json`), `${json}\n`);
      process.stdout.write(`${name}: ${history.events?.length ?? 0} history events -> test/replay/histories/${name}${suffix}.json\n`);
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await worker.stop();
    await closeDeps(deps);
    await simulator.close();
  }
}

main().catch((error: Error) => {
  process.stderr.write(`record-history failed: ${error.stack ?? error.message}\n`);
  process.exit(1);
});
