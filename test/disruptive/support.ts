import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Config } from '../../src/config';
import type { TestApi } from '../support/harness';
import { apiClient, type ApiClient } from '../integration/sessions/support';
import { createTenant } from '../support/factories';

/**
 * Helpers of the resilience tests: the real worker binary as a child process (so it can be
 * killed like a crashed pod), the shared services script, and an HTTP client of the real api.
 */
const ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

export const services = (...args: string[]) => execFileSync('bash', [path.join(ROOT, 'scripts/services.sh'), ...args], { stdio: 'inherit' });

/** The worker's environment: the api's database, task queue, simulator and run settings. */
export function workerEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ENVIRONMENT: config.ENVIRONMENT,
    LOG_LEVEL: 'info',
    DATABASE_URL: config.DATABASE_URL,
    DATABASE_POOL_SIZE: '5',
    // The real server (not the api's, which a test may point at a dead address).
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    ELASTICSEARCH_URL: config.ELASTICSEARCH_URL,
    TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE,
    TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
    SIMULATOR_URL: config.SIMULATOR_URL,
    ELASTICSEARCH_INDEX_PREFIX: config.ELASTICSEARCH_INDEX_PREFIX,
    ...extra,
  };
}

export interface WorkerProcess {
  child: ChildProcess;
  output: string[];
  /** SIGKILL to the whole process group (tsx and node): no graceful shutdown, like a crash. */
  kill(): Promise<void>;
  /** SIGTERM: the graceful shutdown path. */
  stop(): Promise<void>;
}

/** Spawns `tsx src/bin/worker.ts` in its own process group and resolves once it polls. */
export async function spawnWorker(env: NodeJS.ProcessEnv, readyTimeoutMs = 90_000): Promise<WorkerProcess> {
  const child = spawn(TSX, ['src/bin/worker.ts'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ready: () => void;
  const polling = new Promise<void>((resolve) => (ready = resolve));
  const collect = (chunk: Buffer) => {
    const text = String(chunk);
    output.push(...text.split('\n').filter(Boolean));
    if (text.includes('worker polling')) ready();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const worker: WorkerProcess = {
    child,
    output,
    async kill() {
      signalGroup('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    polling.then(() => 'ready' as const),
    exited.then(() => 'exited' as const),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), readyTimeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    await worker.kill();
    throw new Error(`worker did not start (${outcome}):\n${output.slice(-30).join('\n')}`);
  }
  return worker;
}

/** A tenant over HTTP: API key client, an agent and a way to open sessions. */
export async function httpTenant(api: TestApi, agent: Record<string, unknown> = {}) {
  const tenant = await createTenant(api.deps.db, { credits: 100n });
  const client = apiClient(api, tenant.key);
  const created = await client.post('/v1/agents', { project_id: tenant.projectId, name: 'resilience', model: 'openai/gpt-4o-mini', ...agent });
  if (created.status !== 201) throw new Error(`agent create failed: ${created.status} ${JSON.stringify(created.body)}`);
  const agentId = created.body.id as string;
  const newSession = async (): Promise<string> => {
    const reply = await client.post('/v1/sessions', { agent: agentId });
    if (reply.status !== 201) throw new Error(`session create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.id as string;
  };
  return { tenant, client, agentId, newSession };
}

export async function postMessage(client: ApiClient, sessionId: string, text: string) {
  const reply = await client.post(`/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  if (reply.status !== 200) throw new Error(`POST events failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.data as Array<{ id: string; type: string }>;
}

/** Every event of the session through GET /v1/sessions/{id}/events (all pages, oldest first). */
export async function allEvents(client: ApiClient, sessionId: string): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  let page: string | null = null;
  do {
    const reply = await client.get(`/v1/sessions/${sessionId}/events?limit=100${page ? `&page=${encodeURIComponent(page)}` : ''}`);
    if (reply.status !== 200) throw new Error(`GET events failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    out.push(...reply.body.data);
    page = reply.body.next_page;
  } while (page);
  return out;
}

const closing = (e: Record<string, any>): boolean => e.type === 'session.status_idle' || e.type === 'session.error';

/** Polls GET events until the session's log holds `count` closing events (idle or error). */
export async function waitForClosing(client: ApiClient, sessionId: string, count = 1, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(client, sessionId);
    if (events.filter(closing).length >= count) return events;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} closing event(s); log: ${JSON.stringify(events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Ends every workflow a test started on its unique task queue (the dev server keeps them otherwise). */
export async function terminateQueueWorkflows(api: TestApi, taskQueue = api.deps.config.TEMPORAL_TASK_QUEUE): Promise<void> {
  try {
    const client = await api.deps.temporal.get();
    const ids: string[] = [];
    for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) ids.push(wf.workflowId);
    await Promise.all(ids.map((id) => client.workflow.getHandle(id).terminate('test finished').catch(() => undefined)));
  } catch {
    // best effort
  }
}

/** The event types of one run, as the spec's emission rules give them for a plain one-turn run. */
export const ONE_TURN_RUN = ['user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle'];
