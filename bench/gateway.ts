/**
 * Gateway overhead benchmark (not a test): the same chat requests sent straight to the
 * provider simulator and through the gateway, interleaved in one run at a fixed rate and
 * concurrency. Prints p50/p90/p99 latency and requests/s for both, the added latency
 * (gateway minus direct), for non-streaming calls and for streaming time-to-first-byte,
 * plus the api's peak RSS and CPU per request; writes JSON to bench/results/.
 *
 *   npm run bench:gateway            (env: BENCH_RPS=500 BENCH_SECONDS=10 BENCH_CONCURRENCY=64 BENCH_WARMUP_SECONDS=5)
 *
 * Method, so runs compare fairly:
 * - BENCH_RPS is the rate *through the gateway*; direct calls are interleaved at the same
 *   rate (gateway, direct, gateway, ...), open loop, so both see the same machine state.
 * - The load generator uses node:http with keep-alive agents (one per target), not fetch:
 *   on a 2-core machine the generator, the simulator, the api and Postgres share the CPUs,
 *   and fetch costs the generator several times more CPU per request.
 * - The simulator and the api run as separate processes, as in production, with the api
 *   started the way scripts/start.sh starts it, under tsx. tsx transpiles each module once
 *   at load; a CPU profile of the api under load shows no tsx or esbuild frames after
 *   start-up, so compiled JS would change start-up time, not these figures.
 * - The table reports CPU milliseconds per gateway request of the api process and per
 *   request of the simulator and of this generator, from /proc and process.cpuUsage(), so
 *   a reader can tell saturation of the machine from cost of the gateway.
 * - Both paths are warmed up, first sequentially, then for BENCH_WARMUP_SECONDS at the
 *   measured rate (not recorded).
 * - Other work on the machine (a test run) skews everything: check `uptime` first.
 *
 * Postgres must be up (npm run services). Goal: added p50 <= 1 ms and p99 <= 5 ms at 500 requests/s.
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { benchTenant, freePort, processCpuMs, ROOT, startProcess, waitFor } from './support';

const RPS = Number(process.env.BENCH_RPS ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);


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


/** One POST over a keep-alive agent; resolves with total latency, or time to the first body byte when streaming. */
function timed(agent: Agent, url: URL, body: string, headers: Record<string, string>, streaming: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstByte: number | undefined;
    const req = httpRequest(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (response) => {
        response.on('data', () => {
          firstByte ??= performance.now() - started;
        });
        response.on('end', () => {
          if ((response.statusCode ?? 500) >= 400) return reject(new Error(`HTTP ${response.statusCode}`));
          resolve(streaming ? (firstByte ?? performance.now() - started) : performance.now() - started);
        });
        response.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Open-loop at RPS through the gateway and RPS direct, interleaved (gateway, direct, ...), at most CONCURRENCY in flight. */
async function runPhase(streaming: boolean, targets: { direct: () => Promise<number>; gateway: () => Promise<number> }, pids: { api: number; simulator: number }, seconds = SECONDS) {
  const series: Record<'direct' | 'gateway', Series> = { direct: { latencies: [], errors: 0 }, gateway: { latencies: [], errors: 0 } };
  const total = 2 * RPS * seconds;
  const interval = 1000 / (2 * RPS);
  const cpuBefore = { api: processCpuMs(pids.api), simulator: processCpuMs(pids.simulator), generator: process.cpuUsage() };
  let inFlight = 0;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight >= CONCURRENCY) await new Promise((resolve) => setImmediate(resolve));
    const which = i % 2 === 0 ? 'gateway' : 'direct';
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
  const generatorCpu = process.cpuUsage(cpuBefore.generator);
  const perRequest = (ms: number, requests: number) => Math.round((ms / requests) * 1000) / 1000;
  const cpu_ms_per_request = {
    api: perRequest(processCpuMs(pids.api) - cpuBefore.api, total / 2),
    simulator: perRequest(processCpuMs(pids.simulator) - cpuBefore.simulator, total), // direct calls plus the gateway's upstream calls
    generator: perRequest((generatorCpu.user + generatorCpu.system) / 1000, total),
  };
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
    cpu_ms_per_request,
  };
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

async function main() {
  const config = loadConfig();
  const { key } = await benchTenant(config, 'bench');

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
    const agents = { direct: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }), gateway: new Agent({ keepAlive: true, maxSockets: CONCURRENCY }) };
    const directUrl = new URL(`http://127.0.0.1:${simPort}/v1/chat/completions`);
    const gatewayUrl = new URL(`http://127.0.0.1:${apiPort}/v1/chat/completions`);
    const targets = (stream: boolean) => {
      const directBody = JSON.stringify({ model: 'gpt-4o-mini', messages: message, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
      const gatewayBody = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: message, stream });
      return {
        direct: () => timed(agents.direct, directUrl, directBody, {}, stream),
        gateway: () => timed(agents.gateway, gatewayUrl, gatewayBody, { authorization: `Bearer ${key}` }, stream),
      };
    };
    // Warm up both paths (JIT, connection pools) before measuring.
    for (let i = 0; i < 300; i++) await Promise.all([targets(false).direct(), targets(false).gateway(), targets(true).gateway()]);
    const pids = { api: api.pid!, simulator: simulator.pid! };
    const loadBefore = loadAverage();
    // Then at the measured rate, unrecorded: the first seconds under load otherwise measure
    // V8 optimizing the hot path and the heap growing, not the steady state.
    await runPhase(false, targets(false), pids, WARMUP_SECONDS);
    await runPhase(true, targets(true), pids, WARMUP_SECONDS);
    const phases = [await runPhase(false, targets(false), pids), await runPhase(true, targets(true), pids)];
    const result = { date: new Date().toISOString(), method: 'rps_target through the gateway, same rate direct, interleaved; node:http keep-alive client', load_average: { before: loadBefore, after: loadAverage() }, rps_target: RPS, seconds: SECONDS, concurrency: CONCURRENCY, phases, api_peak_rss_mb: peakRssMb(api.pid!) };
    for (const phase of phases) {
      console.log(`\n${phase.metric} at ${RPS} requests/s through the gateway + ${RPS}/s direct (interleaved, concurrency <= ${CONCURRENCY})`);
      console.table({ direct: phase.direct, gateway: phase.gateway, added: phase.added });
      console.log(`CPU ms per request: api ${phase.cpu_ms_per_request.api} (per gateway request), simulator ${phase.cpu_ms_per_request.simulator}, load generator ${phase.cpu_ms_per_request.generator}`);
    }
    console.log(`api peak RSS: ${result.api_peak_rss_mb} MB; load average before ${loadBefore.join(' ')}, after ${result.load_average.after.join(' ')} (2 CPUs)`);
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
