/**
 * Agent-run benchmark (not a test): the time from `POST /v1/sessions/{id}/events` (a
 * user.message) to the `session.status_idle` that closes the run, seen on the session's
 * event stream, for one-turn runs at 1, 10 and 100 concurrent sessions, next to the bare
 * simulator call (the same chat completion sent straight to the simulator at the same
 * concurrency), so the runtime's own overhead (api, Postgres, Temporal, worker) is visible.
 * Also a 5-turn tool-using run (echo server tool called in turns 1-4 via [[repeat:4]], turn 5 answers).
 * After the 100-session phase every session's log is checked: no event lost or duplicated.
 *
 *   npm run bench:runs            (env: BENCH_RUNS_PER_SESSION=5 (at least 50 runs per phase), BENCH_CONCURRENCY=1,10,100, DATABASE_URL,
 *                                  BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the api, worker and simulator)
 *
 * The simulator (zero latency), the api and the worker run as separate processes, as in
 * production, on a private task queue. Needs the services (npm run services).
 * Goal: runtime overhead p50 <= 50 ms at 10 concurrent sessions.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { LazyTemporalClient, terminateRunningOnQueue } from '../src/temporal/client';
import { benchTenant, freePort, pidsOfUser, processCpuMs, ROOT, startProcess, waitFor } from './support';

const RUNS_PER_SESSION = Number(process.env.BENCH_RUNS_PER_SESSION ?? 5);
// A phase measures at least this many runs, so the 1-session figures are not five samples.
const MIN_RUNS_PER_PHASE = 50;
const runsPerSession = (concurrency: number) => Math.max(RUNS_PER_SESSION, Math.ceil(MIN_RUNS_PER_PHASE / concurrency));
const ONE_TURN = ['user.message', 'session.status_running', 'agent.message', 'session.turn_usage', 'session.status_idle'];


const waitForOutput = (child: ChildProcess, needle: string) =>
  new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => String(chunk).includes(needle) && resolve());
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before "${needle}"`)));
  });

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const round = (n: number) => Math.round(n * 10) / 10;
function summary(latencies: number[], elapsedMs: number) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { count: sorted.length, p50: round(percentile(sorted, 50)), p90: round(percentile(sorted, 90)), p99: round(percentile(sorted, 99)), per_s: round(sorted.length / (elapsedMs / 1000)) };
}

type Event = { id: string; type: string; [key: string]: any };

async function main() {
  const config = loadConfig();
  const { projectId, key } = await benchTenant(config, 'bench runs');
  const project = { id: projectId };

  const [simPort, apiPort] = [await freePort(), await freePort()];
  const simUrl = `http://127.0.0.1:${simPort}`;
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const common = {
    ENVIRONMENT: 'development',
    SIMULATOR_URL: simUrl,
    OPENAI_API_KEY: '',
    OPENAI_BASE_URL: '',
    TEMPORAL_TASK_QUEUE: `bench-${randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'warn',
  };
  const simulator = startProcess('src/bin/simulator.ts', { SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, 'inherit');
  const api = startProcess('src/bin/api.ts', { ...common, PORT: String(apiPort), RATE_LIMIT_ENABLED: 'false', DATABASE_POOL_SIZE: '40' }, 'inherit');
  // The reconciler plays no part in a benchmark (nothing is left unsignalled).
  const worker = startProcess('src/bin/worker.ts', { ...common, LOG_LEVEL: 'info', RECONCILE_INTERVAL_MS: '3600000', DATABASE_POOL_SIZE: '40' }, 'pipe');
  const workerReady = waitForOutput(worker, 'worker polling');
  workerReady.catch(() => undefined); // awaited below; a worker that dies early must not crash this process first

  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method: string, route: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${apiUrl}${route}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const payload = await response.json();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(payload)}`);
    return payload;
  };
  const allEvents = async (sessionId: string): Promise<Event[]> => {
    const out: Event[] = [];
    let page: string | null = null;
    do {
      const reply: { data: Event[]; next_page: string | null } = await call('GET', `/v1/sessions/${sessionId}/events?limit=100${page ? `&page=${encodeURIComponent(page)}` : ''}`);
      out.push(...reply.data);
      page = reply.next_page;
    } while (page);
    return out;
  };

  /** Opens the session's event stream; `next(type)` resolves when an event of that type arrives. */
  async function openStream(sessionId: string) {
    const controller = new AbortController();
    const response = await fetch(`${apiUrl}/v1beta1/sessions/${sessionId}/events/stream`, { headers, signal: controller.signal });
    if (!response.ok) throw new Error(`stream: ${response.status}`);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const seen: Event[] = [];
    const waiters: Array<{ type: string; count: number; resolve: (e: Event) => void }> = [];
    const check = () => {
      for (const w of [...waiters]) {
        const matching = seen.filter((e) => e.type === w.type || (w.type === 'closing' && (e.type === 'session.status_idle' || e.type === 'session.error')));
        if (matching.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(matching[w.count - 1]!);
        }
      }
    };
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const message = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = message.split('\n').find((line) => line.startsWith('data: '));
            if (data) seen.push(JSON.parse(data.slice(6)));
          }
          check();
        }
      } catch {
        // aborted
      }
    })();
    return {
      until: (type: string, count: number) =>
        new Promise<Event>((resolve) => {
          waiters.push({ type, count, resolve });
          check();
        }),
      close: () => controller.abort(),
    };
  }

  try {
    await waitFor(`${simUrl}/healthz`);
    await waitFor(`${apiUrl}/healthz`);
    await workerReady;
    const plainAgent = await call('POST', '/v1/agents', { project_id: project.id, name: 'bench', model: 'openai/gpt-4o-mini' });
    const toolAgent = await call('POST', '/v1/agents', { project_id: project.id, name: 'bench tools', model: 'openai/gpt-4o-mini', tools: [{ type: 'echo', name: 'say' }] });
    const newSession = async (agentId: string) => (await call('POST', '/v1/sessions', { agent: agentId })).id as string;

    /** One run on a session: POST user.message, wait for the run's closing event on the stream. */
    async function timedRun(sessionId: string, nth: number, text: string): Promise<number> {
      const stream = await openStream(sessionId);
      try {
        const started = performance.now();
        await call('POST', `/v1/sessions/${sessionId}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
        const closing = await stream.until('closing', 1);
        const elapsed = performance.now() - started;
        if (closing.type !== 'session.status_idle') throw new Error(`run ${nth} of ${sessionId} failed: ${JSON.stringify(closing)}`);
        return elapsed;
      } finally {
        stream.close();
      }
    }

    const bareBody = (text: string) => JSON.stringify({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: text }] });
    async function bareCall(text: string): Promise<number> {
      const started = performance.now();
      const response = await fetch(`${simUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bareBody(text) });
      await response.text();
      return performance.now() - started;
    }

    /** `concurrency` sessions, each running runsPerSession(concurrency) one-turn runs back to back. */
    async function phase(concurrency: number) {
      const perSession = runsPerSession(concurrency);
      const sessions = await Promise.all(Array.from({ length: concurrency }, () => newSession(plainAgent.id)));
      // The first run of a session starts its workflow: warm every session up, unmeasured.
      await Promise.all(sessions.map((id) => timedRun(id, 0, 'warm up')));
      const latencies: number[] = [];
      const cpuBefore = cpuByProcess();
      let started = performance.now();
      await Promise.all(
        sessions.map(async (id) => {
          for (let i = 1; i <= perSession; i++) latencies.push(await timedRun(id, i, `run ${i} of ${id}`));
        }),
      );
      const runs = summary(latencies, performance.now() - started);
      const cpuAfter = cpuByProcess();
      const cpu_ms_per_run = Object.fromEntries(Object.entries(cpuAfter).map(([name, ms]) => [name, round((ms - cpuBefore[name as keyof typeof cpuBefore]) / latencies.length)]));
      const bare: number[] = [];
      started = performance.now();
      await Promise.all(sessions.map(async (id) => {
        for (let i = 1; i <= perSession; i++) bare.push(await bareCall(`run ${i} of ${id}`));
      }));
      const simulator = summary(bare, performance.now() - started);
      return { concurrency, runs_per_session: perSession, runs, simulator, overhead_p50_ms: round(runs.p50 - simulator.p50), cpu_ms_per_run, sessions };
    }

    /**
     * CPU time (user + system) of each process a run passes through, so a reader can tell
     * waiting from work: on a 2-core machine, runs/s can never exceed 2000 / (total CPU ms per run).
     */
    const temporalPid = Number(readFileSync(path.join(process.env.AGENT_GATEWAY_DATA ?? path.join(ROOT, '.data'), 'temporal.pid'), 'utf8'));
    const cpuByProcess = () => {
      const postgres = pidsOfUser('postgres').reduce((sum, pid) => sum + processCpuMs(pid), 0);
      const parts = { api: processCpuMs(api.pid!), worker: processCpuMs(worker.pid!), temporal: processCpuMs(temporalPid), postgres, simulator: processCpuMs(simulator.pid!) };
      return { ...parts, total: Object.values(parts).reduce((a, b) => a + b, 0) };
    };

    const phases = [];
    for (const concurrency of (process.env.BENCH_CONCURRENCY ?? "1,10,100").split(",").map(Number)) {
      process.stdout.write(`one-turn runs at ${concurrency} concurrent session(s)...\n`);
      phases.push(await phase(concurrency));
    }

    // Zero lost or duplicated events at the highest concurrency: every log is exactly 1 + N one-turn runs.
    const last = phases.at(-1)!;
    const problems: string[] = [];
    await Promise.all(
      last.sessions.map(async (id) => {
        const events = await allEvents(id);
        const expected = Array.from({ length: last.runs_per_session + 1 }, () => ONE_TURN).flat();
        if (JSON.stringify(events.map((e) => e.type)) !== JSON.stringify(expected)) problems.push(`${id}: ${events.map((e) => e.type).join(',')}`);
        if (new Set(events.map((e) => e.id)).size !== events.length) problems.push(`${id}: duplicate ids`);
        const replies = events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text);
        const sent = ['warm up', ...Array.from({ length: last.runs_per_session }, (_, i) => `run ${i + 1} of ${id}`)].map((t) => `You said: ${t}`);
        if (JSON.stringify(replies) !== JSON.stringify(sent)) problems.push(`${id}: replies ${JSON.stringify(replies)}`);
      }),
    );

    // A 5-turn tool-using run: turns 1-4 each call the echo tool (a runServerTool activity), turn 5 answers.
    process.stdout.write('tool-using runs...\n');
    const toolText = '[[tool:say {"message":"part"}]] [[repeat:4]]';
    const toolSession = await newSession(toolAgent.id);
    await timedRun(toolSession, 0, toolText);
    const toolLatencies: number[] = [];
    const toolStarted = performance.now();
    for (let i = 1; i <= 10; i++) toolLatencies.push(await timedRun(toolSession, i, toolText));
    const toolRuns = summary(toolLatencies, performance.now() - toolStarted);
    const toolLog = await allEvents(toolSession);
    const turnsPerRun = toolLog.filter((e) => e.type === 'session.turn_usage').length / 11;
    const toolResultsPerRun = toolLog.filter((e) => e.type === 'user.tool_result').length / 11;
    const bareTool: number[] = [];
    for (let i = 0; i < 10; i++) bareTool.push(5 * (await bareCall(toolText)));
    const bareToolSummary = summary(bareTool, 1);

    const result = {
      date: new Date().toISOString(),
      one_turn: phases.map(({ sessions: _s, ...rest }) => rest),
      tool_run: { model_turns_per_run: turnsPerRun, tool_activities_per_run: toolResultsPerRun, runs: toolRuns, simulator_five_calls: { p50: bareToolSummary.p50, p90: bareToolSummary.p90, p99: bareToolSummary.p99 } },
      event_check_100_sessions: { sessions: last.sessions.length, runs: last.sessions.length * (last.runs_per_session + 1), problems },
    };

    console.log('\nPOST user.message -> session.status_idle (ms), one-turn runs, zero-latency simulator');
    console.table(
      Object.fromEntries(
        result.one_turn.flatMap((p) => [
          [`${p.concurrency} sessions: run`, p.runs],
          [`${p.concurrency} sessions: bare simulator`, p.simulator],
          [`${p.concurrency} sessions: overhead`, { p50: p.overhead_p50_ms }],
        ]),
      ),
    );
    console.log('CPU milliseconds per run, by process (postgres: all its backends):');
    console.table(Object.fromEntries(result.one_turn.map((p) => [`${p.concurrency} sessions`, p.cpu_ms_per_run])));
    console.log(`tool-using run (${turnsPerRun} model turns, ${toolResultsPerRun} echo tool activities), 1 session:`);
    console.table({ run: toolRuns, 'bare simulator (5 calls, estimated as 5x one)': result.tool_run.simulator_five_calls });
    console.log(
      `events at ${last.sessions.length} concurrent sessions: ${result.event_check_100_sessions.runs} runs, ${problems.length === 0 ? 'no event lost or duplicated' : `${problems.length} PROBLEMS:\n${problems.join('\n')}`}`,
    );
    mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    const file = path.join(ROOT, `bench/results/runs-${result.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2));
    console.log(`results: ${path.relative(ROOT, file)}`);
    if (problems.length > 0) process.exitCode = 1;
  } finally {
    for (const child of [worker, api, simulator]) child.kill('SIGTERM');
    // The session workflows of this private queue would otherwise stay running with no worker.
    const temporal = new LazyTemporalClient({ address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE });
    await temporal
      .get()
      .then((client) => terminateRunningOnQueue(client, common.TEMPORAL_TASK_QUEUE, 'benchmark finished'))
      .then((count) => console.log(`terminated the benchmark's ${count} session workflows`))
      .catch((error) => console.error(`could not terminate the benchmark's workflows: ${error}`))
      .finally(() => temporal.close());
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
