import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Pool } from 'pg';
import { startApi, type TestApi } from '../../support/harness';
import { bearer, createKey, createTenant, json } from '../../support/factories';
import { setBalanceNano } from '../../support/credits';
import { startGatewayEnv, type GatewayEnv } from '../gateway/gateway-env';

/**
 * The hot-path shortcuts must not weaken the product rules: API key lookups are cached per
 * process and positive balances noted (both invalidated by NOTIFY), and metering writes
 * batches in one statement.
 */

let env: GatewayEnv;
let second: TestApi;
beforeAll(async () => {
  env = await startGatewayEnv();
  second = await startApi({ SIMULATOR_URL: env.sim.url, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', RATE_LIMIT_ENABLED: 'false' });
});
afterAll(async () => {
  await second?.close();
  await env?.close();
});

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: bearer(key),
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
  });
const listCollections = (url: string, key: string) => fetch(`${url}/v1/kb/collections`, { headers: bearer(key) });

/** Until both instances serve from their cache (their revocation listener is up). */
async function warm(key: string) {
  for (let i = 0; i < 20; i++) {
    expect((await listCollections(env.api.url, key)).status).toBe(200);
    expect((await listCollections(second.url, key)).status).toBe(200);
  }
}

test('a key revoked through the admin CLI is refused on the very next request by another api instance', async () => {
  const { key, id } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'all' });
  await warm(key);
  await promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', 'key', 'revoke', '--id', id], {
    env: { ...process.env, DATABASE_URL: env.api.deps.config.DATABASE_URL },
  });
  const next = await listCollections(second.url, key);
  expect(next.status).toBe(401);
  expect((await json(next)).error.type).toBe('invalid_token');
  expect((await chat(second.url, key)).status).toBe(401);
  expect((await listCollections(env.api.url, key)).status).toBe(401);
});

test('a balance exhausted by another writer is refused on the next request; a grant through the admin CLI reopens it', async () => {
  const tenant = await createTenant(env.api.deps.db, { credits: 1000n });
  for (let i = 0; i < 5; i++) {
    expect((await chat(env.api.url, tenant.key)).status).toBe(200);
    expect((await chat(second.url, tenant.key)).status).toBe(200);
  }
  // Another writer (an agent run's debit, another instance) drives the balance to zero.
  await setBalanceNano(env.api.deps.db, tenant.projectId, 0n, [env.api.deps, second.deps]);
  const refused = await chat(second.url, tenant.key);
  expect(refused.status).toBe(402);
  expect((await json(refused)).error.type).toBe('insufficient_credits');
  expect((await chat(env.api.url, tenant.key)).status).toBe(402);
  await promisify(execFile)('npx', ['tsx', 'src/bin/admin.ts', 'credits', 'grant', '--project', tenant.projectId, '--credits', '5'], {
    env: { ...process.env, DATABASE_URL: env.api.deps.config.DATABASE_URL },
  });
  expect((await chat(second.url, tenant.key)).status).toBe(200);
});

test('a balance driven to zero by the gateway debits refuses the following requests', async () => {
  const tenant = await createTenant(env.api.deps.db, { credits: 1000n });
  for (let i = 0; i < 5; i++) {
    expect((await chat(env.api.url, tenant.key)).status).toBe(200);
    expect((await chat(second.url, tenant.key)).status).toBe(200);
  }
  // Metering is written after the response, in batches: let those ten debits land first,
  // or one of them would overwrite the balance set below.
  for (let attempt = 0; attempt < 100; attempt++) {
    const { rows } = await env.api.deps.db.query('SELECT count(*)::int AS n FROM usage_records WHERE project_id = $1', [tenant.projectId]);
    if (rows[0].n >= 10) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // One nano-credit left (still positive, so both instances keep their note): the next
  // request is admitted and its debit takes the balance across zero.
  await env.api.deps.db.query('UPDATE project_credits SET balance_nano = 1 WHERE project_id = $1', [tenant.projectId]);
  const first = await chat(env.api.url, tenant.key);
  expect(first.status).toBe(200);
  await first.arrayBuffer();
  for (let attempt = 0; attempt < 100; attempt++) {
    const { rows } = await env.api.deps.db.query('SELECT balance_nano::bigint <= 0 AS spent FROM project_credits WHERE project_id = $1', [tenant.projectId]);
    if (rows[0].spent) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // The instance that debited knows at once; the other learns from the debit's notification,
  // delivered asynchronously (a few milliseconds, more on a loaded machine).
  expect((await chat(env.api.url, tenant.key)).status).toBe(402);
  let status = 0;
  for (let attempt = 0; attempt < 50 && status !== 402; attempt++) {
    status = (await chat(second.url, tenant.key)).status;
    if (status !== 402) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(status).toBe(402);
});

test('losing the revocation listener empties the cache: a revocation missed meanwhile is still seen', async () => {
  const { key, id } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'all' });
  await warm(key);
  const admin = new Pool({ connectionString: env.api.deps.config.DATABASE_URL, max: 1 });
  try {
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gateway-invalidations'`);
    // While no listener runs, a revocation's NOTIFY reaches nobody (simulated by not sending one).
    await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the listeners reconnect
  } finally {
    await admin.end();
  }
  expect((await listCollections(second.url, key)).status).toBe(401);
  expect((await listCollections(env.api.url, key)).status).toBe(401);
});

test('last_used_at is recorded although lookups are cached', async () => {
  const { key, id } = await createKey(env.api.deps.db, { projectId: env.tenant.projectId, preset: 'all' });
  await warm(key);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const { rows } = await env.api.deps.db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
  expect(rows[0].last_used_at).toBeInstanceOf(Date);
});

test('parallel metered requests on two instances: every usage row has its debit, the ledger is exact', async () => {
  const tenant = await createTenant(env.api.deps.db, { credits: 1000n });
  const n = 60;
  const responses = await Promise.all(Array.from({ length: n }, (_, i) => chat(i % 2 ? second.url : env.api.url, tenant.key)));
  expect(responses.every((r) => r.status === 200)).toBe(true);
  await Promise.all(responses.map((r) => r.arrayBuffer()));
  const db = env.api.deps.db;
  let usage: { n: number; credits: string } = { n: 0, credits: '0' };
  for (let attempt = 0; attempt < 100 && usage.n < n; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    usage = (await db.query('SELECT count(*)::int AS n, coalesce(sum(credits_nano), 0)::text AS credits FROM usage_records WHERE project_id = $1', [tenant.projectId])).rows[0];
  }
  expect(usage.n).toBe(n);
  const ledger = (await db.query(
    `SELECT count(*) FILTER (WHERE kind = 'debit')::int AS debits, sum(delta_nano)::text AS total,
            (sum(delta_nano) FILTER (WHERE kind = 'grant'))::text AS grants FROM credit_ledger WHERE project_id = $1`,
    [tenant.projectId],
  )).rows[0];
  const balance = BigInt((await db.query('SELECT balance_nano::text AS b FROM project_credits WHERE project_id = $1', [tenant.projectId])).rows[0].b);
  expect(BigInt(usage.credits)).toBeGreaterThan(0n);
  expect(ledger.debits).toBe(n);
  expect(BigInt(ledger.total)).toBe(balance);
  expect(BigInt(ledger.grants) - BigInt(usage.credits)).toBe(balance);
  // The rollups count every row exactly once.
  const rollup = (await db.query('SELECT sum(request_count)::int AS n, sum(credits_nano)::text AS credits FROM usage_rollup_1d WHERE project_id = $1', [tenant.projectId])).rows[0];
  expect(rollup.n).toBe(n);
  expect(rollup.credits).toBe(usage.credits);
});
