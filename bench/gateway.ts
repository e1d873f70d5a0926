/**
 * Gateway overhead benchmark (not a test): the same chat requests sent straight to the
 * provider simulator and through the gateway, interleaved in one run at a fixed rate and
 * concurrency. Prints p50/p90/p99 latency and requests/s for both, the added latency
 * (gateway minus direct), for non-streaming calls and for streaming time-to-first-byte,
 * plus the api's peak RSS; writes JSON to bench/results/.
 *
 *   npm run bench:gateway            (env: BENCH_RPS=500 BENCH_SECONDS=10 BENCH_CONCURRENCY=64)
 *
 * The simulator and the api run as separate processes, as in production; Postgres must
 * be up (npm run services). Goal: added p50 <= 1 ms and p99 <= 5 ms at 500 requests/s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { createPool } from '../src/store/db';
import { migrate } from '../src/store/migrate';
import { createAccount, createProject } from '../src/store/accounts';
import { issueApiKey } from '../src/auth/provisioning';
import { grantCredits, NANO_PER_CREDIT } from '../src/billing/credits';

const RPS = Number(process.env.BENCH_RPS ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROOT = path.resolve(__dirname, '..');

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });

function startProcess(script: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not come up`);
}

const peakRssMb = (pid: number): number => {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Series {
  latencies: number[];
  errors: number;
}

async function timed(url: string, body: string, headers: Record<string, string>, streaming: boolean): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  if (!response.ok) {
    await response.arrayBuffer();
    throw new Error(`HTTP ${response.status}`);
  }
  if (streaming) {
    const reader = response.body!.getReader();
    await reader.read(); // first byte
    const ttfb = performance.now() - started;
    while (!(await reader.read()).done);
    return ttfb;
  }
  await response.arrayBuffer();
  return performance.now() - started;
}

/** Open-loop at RPS total, pairs interleaved (direct, gateway, direct, ...), at most CONCURRENCY in flight. */
async function runPhase(streaming: boolean, targets: { direct: () => Promise<number>; gateway: () => Promise<number> }) {
  const series: Record<'direct' | 'gateway', Series> = { direct: { latencies: [], errors: 0 }, gateway: { latencies: [], errors: 0 } };
  const total = RPS * SECONDS;
  const interval = 1000 / RPS;
  let inFlight = 0;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight >= CONCURRENCY) await new Promise((resolve) => setImmediate(resolve));
    const which = i % 2 === 0 ? 'direct' : 'gateway';
    inFlight++;
    pending.push(
      targets[which]()
        .then((ms) => void series[which].latencies.push(ms))
        .catch(() => void series[which].errors++)
        .finally(() => inFlight--),
    );
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - started) / 1000;
  const summary = (s: Series) => {
    const sorted = [...s.latencies].sort((a, b) => a - b);
    return { count: sorted.length, errors: s.errors, rps: Math.round(sorted.length / elapsed), p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
  };
  const direct = summary(series.direct);
  const gateway = summary(series.gateway);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    metric: streaming ? 'streaming time to first byte (ms)' : 'non-streaming latency (ms)',
    direct,
    gateway,
    added: { p50: round(gateway.p50 - direct.p50), p90: round(gateway.p90 - direct.p90), p99: round(gateway.p99 - direct.p99) },
  };
}

async function main() {
  const config = loadConfig();
  const db = createPool(config.DATABASE_URL, 2);
  await migrate(db);
  const account = await createAccount(db, 'bench');
  const project = await createProject(db, account.id, 'bench');
  await grantCredits(db, project.id, 1_000_000n * NANO_PER_CREDIT, 'bench');
  const key = (await issueApiKey(db, { projectId: project.id, preset: 'all' })).key;
  await db.end();

  const [simPort, apiPort] = [await freePort(), await freePort()];
  const simulator = startProcess('src/bin/simulator.ts', { SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' });
  const api = startProcess('src/bin/api.ts', {
    PORT: String(apiPort),
    SIMULATOR_URL: `http://127.0.0.1:${simPort}`,
    ENVIRONMENT: 'development',
    OPENAI_API_KEY: '',
    OPENAI_BASE_URL: '',
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'warn',
  });
  try {
    await waitFor(`http://127.0.0.1:${simPort}/healthz`);
    await waitFor(`http://127.0.0.1:${apiPort}/healthz`);
    const message = [{ role: 'user', content: 'benchmark request [[tokens:16]]' }];
    const targets = (stream: boolean) => {
      const directBody = JSON.stringify({ model: 'gpt-4o-mini', messages: message, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
      const gatewayBody = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: message, stream });
      return {
        direct: () => timed(`http://127.0.0.1:${simPort}/v1/chat/completions`, directBody, {}, stream),
        gateway: () => timed(`http://127.0.0.1:${apiPort}/v1/chat/completions`, gatewayBody, { authorization: `Bearer ${key}` }, stream),
      };
    };
    // Warm up both paths (JIT, connection pools) before measuring.
    for (let i = 0; i < 300; i++) await Promise.all([targets(false).direct(), targets(false).gateway(), targets(true).gateway()]);
    const phases = [await runPhase(false, targets(false)), await runPhase(true, targets(true))];
    const result = { date: new Date().toISOString(), rps_target: RPS, seconds: SECONDS, concurrency: CONCURRENCY, phases, api_peak_rss_mb: peakRssMb(api.pid!) };
    for (const phase of phases) {
      console.log(`\n${phase.metric} at ${RPS} requests/s (interleaved, concurrency <= ${CONCURRENCY})`);
      console.table({ direct: phase.direct, gateway: phase.gateway, added: phase.added });
    }
    console.log(`api peak RSS: ${result.api_peak_rss_mb} MB`);
    mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    const file = path.join(ROOT, `bench/results/gateway-${result.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2));
    console.log(`results: ${path.relative(ROOT, file)}`);
  } finally {
    api.kill('SIGTERM');
    simulator.kill('SIGTERM');
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
