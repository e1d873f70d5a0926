import { Runtime, DefaultLogger, type Worker, type WorkerOptions } from '@temporalio/worker';
import { createWorker } from '../../src/temporal/worker';
import type { Deps } from '../../src/deps';
import { withTransaction } from '../../src/store/db';
import { appendEvents, lockSession, presentEvent, EVENT_COLUMNS, type EventRow } from '../../src/store/events';
import { newId } from '../../src/store/ids';
import { signalSession } from '../../src/temporal/session-signals';
import { startApi, type TestApi } from './harness';
import { startTestSimulator, type Simulator } from './simulator';
import { createTenant, json, type Tenant } from './factories';

let runtimeInstalled = false;

/** A real worker on the test api's unique task queue, polling until `stop()`. */
export async function startTestWorker(deps: Deps, overrides: Partial<WorkerOptions> = {}): Promise<{ worker: Worker; stop(): Promise<void> }> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  const { worker, connection } = await createWorker(deps, overrides);
  const running = worker.run();
  return {
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** Rows for an agent and a session of a project (the agents/sessions API has its own tests). */
export async function createAgentAndSession(deps: Deps, projectId: string, agent: { model?: string; tools?: unknown[]; system_prompt?: string; max_tokens?: number; settings?: Record<string, unknown> } = {}) {
  const agentId = newId('agent');
  await deps.db.query('INSERT INTO agents (id, project_id, name, model, tools, system_prompt, max_tokens, settings) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    agentId,
    projectId,
    'test agent',
    agent.model ?? 'openai/gpt-4o-mini',
    agent.tools ? JSON.stringify(agent.tools) : null,
    agent.system_prompt ?? null,
    agent.max_tokens ?? null,
    agent.settings ? JSON.stringify(agent.settings) : null,
  ]);
  const sessionId = newId('sess');
  await deps.db.query('INSERT INTO sessions (id, project_id, agent_id) VALUES ($1, $2, $3)', [sessionId, projectId, agentId]);
  return { agentId, sessionId, projectId };
}

/** Appends events under the session lock as the events API does, then signals the workflow. */
/** Appends events as the api does, then signals the workflow (unless `signal: false`: the api's signal was lost). */
export async function sendEvents(deps: Deps, session: { sessionId: string; agentId: string; projectId: string }, events: Array<{ type: string; content: unknown[] }>, options: { signal?: boolean } = {}) {
  let interruptRun: string | null = null;
  await withTransaction(deps.db, async (client) => {
    const locked = (await lockSession(client, session.sessionId))!;
    const pending = new Set(locked.pending_tool_use_ids);
    for (const event of events) {
      if (event.type === 'user.tool_result') for (const block of event.content as Array<{ tool_use_id: string }>) pending.delete(block.tool_use_id);
    }
    // As the api does: an interrupt names the run holding the session; a request with a
    // user.message names the run that answers it (started now, or queued behind the one in flight).
    const runId = events.some((e) => e.type === 'user.message') ? newId('run') : null;
    await appendEvents(client, session.sessionId, events.map((e) => ({ ...e, run_id: e.type === 'user.interrupt' ? locked.active_run_id : runId })));
    const startsRun = runId !== null && !locked.active_run_id;
    if (events.some((e) => e.type === 'user.interrupt')) interruptRun = locked.active_run_id;
    await client.query(
      `UPDATE sessions SET pending_tool_use_ids = $2, active_run_id = COALESCE(active_run_id, $3), status = CASE WHEN $3::text IS NULL THEN status ELSE 'running' END WHERE id = $1`,
      [session.sessionId, JSON.stringify([...pending]), startsRun ? runId : null],
    );
  });
  if (options.signal === false) return;
  const title = (await deps.db.query<{ title: string | null }>('SELECT title FROM sessions WHERE id = $1', [session.sessionId])).rows[0]?.title;
  const ref = { id: session.sessionId, project_id: session.projectId, agent_id: session.agentId, title };
  if (interruptRun) await signalSession(deps, ref, 'interrupt', interruptRun);
  else await signalSession(deps, ref);
}

export async function listEvents(deps: Deps, sessionId: string): Promise<Array<Record<string, any>>> {
  const { rows } = await deps.db.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM session_events WHERE session_id = $1 ORDER BY created_at, seq`, [sessionId]);
  return rows.map((row) => presentEvent(row, { includeThinking: true }));
}

/** Polls the log until `count` events of `type` exist (the way API clients wait for a reply). */
export async function waitForEvent(deps: Deps, sessionId: string, type: string, count = 1, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await listEvents(deps, sessionId);
    const matching = events.filter((e) => e.type === type || (type === 'closing' && (e.type === 'session.status_idle' || e.type === 'session.error')));
    if (matching.length >= count) return { events, event: matching[count - 1]! };
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count}x ${type}; log: ${JSON.stringify(events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const text = (value: string) => [{ type: 'text', text: value }];

/** Calls the runtime env's api over HTTP with its tenant's key: the status and the parsed body. */
export function apiCaller(env: RuntimeEnv) {
  return async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${env.api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await json(response) };
  };
}

export interface RuntimeEnv {
  api: TestApi;
  simulator: Simulator;
  worker: Awaited<ReturnType<typeof startTestWorker>>;
  /** A tenant with 100 credits and an `all` key. */
  tenant: Tenant;
}

/**
 * For one test file: the real api and worker over an in-process provider simulator, and a
 * tenant, started before its tests and stopped after them. Read the members inside tests.
 */
export function useRuntimeEnv(apiEnv: Record<string, string> = {}): RuntimeEnv {
  const env = {} as RuntimeEnv;
  beforeAll(async () => {
    env.simulator = await startTestSimulator();
    env.api = await startApi({ SIMULATOR_URL: env.simulator.url, ...apiEnv });
    env.worker = await startTestWorker(env.api.deps);
    env.tenant = await createTenant(env.api.deps.db, { credits: 100n });
  });
  afterAll(async () => {
    await env.worker?.stop();
    await env.api?.close();
    await env.simulator?.close();
  });
  return env;
}
