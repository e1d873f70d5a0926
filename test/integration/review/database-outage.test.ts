import { Client } from 'pg';
import { startApi, type TestApi } from '../../support/harness';
import { createSession, tenantWithAgent } from '../sessions/support';
import { testConfig } from '../../support/config';
import { bearer, json, type Tenant } from '../../support/factories';
import { startFreezableProxy } from '../../support/freezable-proxy';

/**
 * Postgres going away under a request: a connection lost inside a transaction (a restart, a
 * failover, pg_terminate_backend) used to end the whole process (an 'error' event on the
 * checked-out client nobody listened to), and a statement Postgres stopped answering (a
 * partition) waited forever. Both are an outage: 503 in the envelope, the broken connection
 * discarded, nothing written, and the process goes on serving.
 */
const QUERY_TIMEOUT_MS = 2000;
let api: TestApi;
let tenant: Tenant;
let sessionId: string;
let locker: Client;
beforeAll(async () => {
  api = await startApi({ DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS) });
  const created = await tenantWithAgent(api);
  tenant = created.tenant;
  sessionId = (await createSession(created.client, created.agent.id)).id;
  locker = new Client({ connectionString: testConfig().DATABASE_URL });
  await locker.connect();
});
afterAll(async () => {
  await locker.end();
  await api.close();
});

const message = (text: string) =>
  fetch(`${api.url}/v1/sessions/${sessionId}/events`, {
    method: 'POST',
    headers: bearer(tenant.key),
    body: JSON.stringify({ events: [{ type: 'system.message', content: [{ type: 'text', text }] }] }),
  });
const eventsWith = async (text: string) =>
  (await api.deps.db.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND content::text LIKE $2`, [sessionId, `%${text}%`])).rowCount;

/** Holds the session's row lock, so the events route's transaction waits on it. */
async function whileLocked<T>(work: () => Promise<T>): Promise<T> {
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
  try {
    return await work();
  } finally {
    await locker.query('ROLLBACK');
  }
}

async function expect503(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect((await json(response)).error).toMatchObject({ type: 'service_unavailable', code: 503 });
}

test('a connection terminated inside a transaction: 503, nothing written, the process keeps serving', async () => {
  await whileLocked(async () => {
    const pending = message('terminated-write');
    // The route's backend, waiting for the lock.
    let pid: number | undefined;
    for (const deadline = Date.now() + 5000; pid === undefined && Date.now() < deadline; ) {
      const { rows } = await locker.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))');
      pid = rows[0]?.pid;
    }
    expect(pid).toBeDefined();
    await locker.query('SELECT pg_terminate_backend($1)', [pid]);
    await expect503(await pending);
  });
  expect(await eventsWith('terminated-write')).toBe(0);
  expect((await message('after-termination')).status).toBe(200);
  expect(await eventsWith('after-termination')).toBe(1);
});

test(`a statement longer than DATABASE_QUERY_TIMEOUT_MS (a lock held): cancelled by Postgres, 503, nothing written, the next request served`, async () => {
  const started = Date.now();
  await whileLocked(async () => {
    await expect503(await message('timed-out-write'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 100);
  });
  expect(await eventsWith('timed-out-write')).toBe(0);
  expect((await message('after-timeout')).status).toBe(200);
});

test('Postgres stops answering (a partition): 503 once the client gives up, then served again without a restart', async () => {
  const url = new URL(testConfig().DATABASE_URL);
  const proxy = await startFreezableProxy(Number(url.port || 5432));
  url.host = proxy.address;
  const partitioned = await startApi({ DATABASE_URL: url.toString(), DATABASE_QUERY_TIMEOUT_MS: '1000' });
  try {
    const agents = () => fetch(`${partitioned.url}/v1/agents?project_id=${tenant.projectId}`, { headers: bearer(tenant.key) });
    expect((await agents()).status).toBe(200);
    proxy.frozen = true;
    const started = Date.now();
    await expect503(await agents());
    // The client's own timeout (1 s + 5 s margin) or the pool's connect timeout (5 s), not for ever.
    expect(Date.now() - started).toBeLessThan(15_000);
    proxy.frozen = false;
    expect((await agents()).status).toBe(200);
  } finally {
    await partitioned.close();
    await proxy.close();
  }
});
