/**
 * `npm run bench:analytics`: GET /v1/analytics over 10 million usage rows.
 *
 * Seeds (once; reused while the row count matches) a dedicated database with one project
 * holding BENCH_ROWS usage rows spread over the 31 days before seeding, written through the
 * real usage_records table so the rollup trigger maintains the rollups exactly as in
 * production. Then it starts the real api in-process and times HTTP requests. The target:
 * p50 ≤ 100 ms for a 30-day, 1-day-bucket query grouped by model and operation.
 *
 * Data shape (realistic, correlated dimensions): 6 models, 5 operations, 20 sites plus
 * usage without a site; each site has its own application; auth method and actor type
 * vary per request between two values per site.
 *
 * Env: BENCH_DATABASE_URL (default .../gateway_bench), BENCH_ADMIN_DATABASE_URL (to create
 * it), BENCH_ROWS (default 10000000), BENCH_ITERATIONS (default 30).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../src/config';
import { createDeps, closeDeps } from '../src/deps';
import { createApp } from '../src/api/app';
import { createLogger } from '../src/logger';
import { migrate } from '../src/store/migrate';
import { signDevIdpToken } from '../src/auth/tokens';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://gateway:gateway@127.0.0.1:54329/gateway_bench';
const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:54329/postgres';
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 30);
const BATCH = 500_000;
const ACCOUNT = 'acct_bench_analytics';
const PROJECT = 'proj_bench_analytics';
const TARGET_P50_MS = 100;

async function ensureDatabase(): Promise<void> {
  const name = new URL(DATABASE_URL).pathname.slice(1);
  const owner = decodeURIComponent(new URL(DATABASE_URL).username);
  const probe = new Client({ connectionString: DATABASE_URL });
  try {
    await probe.connect();
    return;
  } catch {
    // fall through: create it
  } finally {
    await probe.end().catch(() => undefined);
  }
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '')}" OWNER "${owner.replace(/"/g, '')}"`);
  } catch (error) {
    throw new Error(`cannot create the bench database ${name} via ${ADMIN_URL}: ${(error as Error).message}. Create it or set BENCH_DATABASE_URL.`);
  } finally {
    await admin.end();
  }
}

async function seed(db: ReturnType<typeof createDeps>['db']): Promise<{ seededAt: number }> {
  await db.query(`INSERT INTO accounts (id, name) VALUES ($1, 'bench') ON CONFLICT DO NOTHING`, [ACCOUNT]);
  await db.query(`INSERT INTO projects (id, account_id, name) VALUES ($1, $2, 'bench') ON CONFLICT DO NOTHING`, [PROJECT, ACCOUNT]);
  const { rows } = await db.query<{ n: string; latest: Date | null }>('SELECT count(*) AS n, max(created_at) AS latest FROM usage_records WHERE project_id = $1', [PROJECT]);
  if (Number(rows[0]!.n) === ROWS && rows[0]!.latest) {
    console.log(`reusing ${ROWS.toLocaleString()} seeded usage rows`);
    return { seededAt: Math.floor(rows[0]!.latest.getTime() / 1000) + 1 };
  }
  console.log(`seeding ${ROWS.toLocaleString()} usage rows (once; reused by later runs)...`);
  for (const table of ['usage_records', 'usage_rollup_10m', 'usage_rollup_1h', 'usage_rollup_1d']) {
    await db.query(`DELETE FROM ${table} WHERE project_id = $1`, [PROJECT]);
  }
  const seededAt = Math.floor(Date.now() / 1000);
  const span = 31 * 86400;
  const started = Date.now();
  for (let offset = 0; offset < ROWS; offset += BATCH) {
    const count = Math.min(BATCH, ROWS - offset);
    // Rows are spread evenly in time (i-th row at a fixed step), dimensions drawn per row.
    await db.query(
      `INSERT INTO usage_records (created_at, project_id, model, operation, client_id, auth_method, actor_type, application,
                                  input_tokens, output_tokens, credits_nano)
       SELECT to_timestamp($3::float8 - $4::float8 + (i::float8 * $4::float8 / $5::float8)), $1,
              (ARRAY['openai/gpt-4o','openai/gpt-4o-mini','anthropic/claude-sonnet','anthropic/claude-haiku','google/gemini-pro','google/gemini-flash'])[1 + (h % 6)],
              (ARRAY['chat','messages','agent_run','image','transcription'])[1 + ((h / 6) % 5)],
              CASE WHEN site = 0 THEN '' ELSE 'client_' || site END,
              CASE WHEN site = 0 THEN (ARRAY['api_key','okta'])[1 + ((h / 30) % 2)] ELSE (ARRAY['service_token','browser_session'])[1 + ((h / 30) % 2)] END,
              CASE WHEN site = 0 THEN (ARRAY['service','authenticated'])[1 + ((h / 30) % 2)] ELSE (ARRAY['service','anonymous'])[1 + ((h / 30) % 2)] END,
              CASE WHEN site = 0 THEN 'third_party' ELSE (ARRAY['svc-ai-chatbot','svc-ai-playground','svc-coworker','svc-connector','svc-agents','svc-kb-sync'])[1 + (site % 6)] END,
              100 + h % 2000, 10 + h % 500, 1000 + (h % 100000)
         FROM (SELECT i, h, (h / 60) % 21 AS site
                 FROM (SELECT i, (hashint8(i)::bigint & 2147483647) AS h FROM generate_series($2::bigint, $2::bigint + $6 - 1) AS i) AS hashed) AS r`,
      [PROJECT, offset, seededAt, span, ROWS, count],
    );
    process.stdout.write(`  ${(offset + count).toLocaleString()} rows (${Math.round((Date.now() - started) / 1000)} s)\r`);
  }
  process.stdout.write('\n');
  await db.query('VACUUM ANALYZE usage_rollup_1d');
  await db.query('VACUUM ANALYZE usage_rollup_1h');
  await db.query('VACUUM ANALYZE usage_rollup_10m');
  await db.query('ANALYZE usage_records');
  return { seededAt };
}

interface Scenario {
  name: string;
  params: Record<string, string | number>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  await ensureDatabase();
  const config = loadConfig({ ...process.env, DATABASE_URL, LOG_LEVEL: 'silent', RATE_LIMIT_ENABLED: 'false' });
  const deps = createDeps(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(deps).callback());
  try {
    await migrate(deps.db);
    const { seededAt } = await seed(deps.db);
    const { rows: sizes } = await deps.db.query<{ grain: string; n: string }>(
      `SELECT '10m' AS grain, count(*) AS n FROM usage_rollup_10m WHERE project_id = $1 UNION ALL
       SELECT '1h', count(*) FROM usage_rollup_1h WHERE project_id = $1 UNION ALL
       SELECT '1d', count(*) FROM usage_rollup_1d WHERE project_id = $1`,
      [PROJECT],
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const token = await signDevIdpToken(config, { subject: 'bench', accountIds: [ACCOUNT] });

    const end = seededAt;
    const scenarios: Scenario[] = [
      { name: '30d / 1d, group model+operation (target)', params: { start_time: end - 30 * 86400, end_time: end, bucket_width: '1d' } },
      { name: '30d / 1d, UTC-midnight-aligned window', params: { start_time: Math.floor(end / 86400) * 86400 - 30 * 86400, end_time: Math.floor(end / 86400) * 86400, bucket_width: '1d' } },
      { name: '30d / 1d, group by all six dimensions', params: { start_time: end - 30 * 86400, end_time: end, bucket_width: '1d', group_by: 'model,operation,client_id,auth_method,actor_type,application' } },
      { name: '30d / 1d, filter client_id', params: { start_time: end - 30 * 86400, end_time: end, bucket_width: '1d', client_id: 'client_7' } },
      { name: '7d / 1h, group model+operation', params: { start_time: end - 7 * 86400, end_time: end, bucket_width: '1h' } },
      { name: '24h / 10m, group model+operation', params: { start_time: end - 86400, end_time: end, bucket_width: '10m' } },
    ];
    const results = [];
    for (const scenario of scenarios) {
      const query = new URLSearchParams(Object.entries({ project_id: PROJECT, ...scenario.params }).map(([k, v]): [string, string] => [k, String(v)]));
      const timings: number[] = [];
      let requests = 0;
      for (let i = 0; i < ITERATIONS + 3; i++) {
        const started = performance.now();
        const response = await fetch(`${url}/v1/analytics?${query}`, { headers: { authorization: `Bearer ${token}` } });
        const body = (await response.json()) as { totals?: { request_count: number } };
        const elapsed = performance.now() - started;
        if (response.status !== 200) throw new Error(`${scenario.name}: ${response.status} ${JSON.stringify(body)}`);
        requests = body.totals!.request_count;
        if (i >= 3) timings.push(elapsed); // the first three warm the caches and the pool
      }
      timings.sort((a, b) => a - b);
      results.push({
        scenario: scenario.name,
        p50_ms: +percentile(timings, 50).toFixed(1),
        p95_ms: +percentile(timings, 95).toFixed(1),
        max_ms: +timings[timings.length - 1]!.toFixed(1),
        requests_in_window: requests,
      });
    }

    console.log(`\nGET /v1/analytics over ${ROWS.toLocaleString()} usage rows (${ITERATIONS} timed requests each, HTTP end to end)`);
    console.log(`rollup rows for the project: ${sizes.map((s) => `${s.grain} ${Number(s.n).toLocaleString()}`).join(', ')}\n`);
    console.table(results);
    const target = results[0]!;
    const pass = target.p50_ms <= TARGET_P50_MS;
    console.log(`target: p50 ≤ ${TARGET_P50_MS} ms for "${target.scenario}": ${target.p50_ms} ms → ${pass ? 'PASS' : 'FAIL'}`);

    const outDir = path.join(__dirname, 'results');
    mkdirSync(outDir, { recursive: true });
    const file = path.join(outDir, `analytics-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(
      file,
      `${JSON.stringify({ bench: 'analytics', rows: ROWS, iterations: ITERATIONS, rollup_rows: Object.fromEntries(sizes.map((s) => [s.grain, Number(s.n)])), target_p50_ms: TARGET_P50_MS, pass, results, ran_at: new Date().toISOString() }, null, 2)}\n`,
    );
    console.log(`results: ${path.relative(process.cwd(), file)}`);
    if (!pass) process.exitCode = 1;
  } finally {
    server.close();
    await closeDeps(deps);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
