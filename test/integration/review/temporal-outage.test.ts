import { startApi, type TestApi } from '../../support/harness';
import { createSession, tenantWithAgent } from '../sessions/support';
import { bearer, type Tenant } from '../../support/factories';
import { SIGNAL_DEADLINE_MS } from '../../../src/temporal/session-signals';
import { reconcileOnce } from '../../../src/temporal/reconciler';
import { startFreezableProxy, type FreezableProxy } from '../../support/freezable-proxy';

/**
 * Temporal stops answering (a partition: connections stay open, nothing comes back) after the
 * api has connected. A message is committed before its signal; the signal used to wait on the
 * client's retries for ever, so the client got no answer (and a client that gave up and
 * retried sent the message twice). It answers within the signal's deadline now, the message
 * stored and left for the reconciler.
 */
let api: TestApi;
let tenant: Tenant;
let sessionId: string;
let proxy: FreezableProxy;

beforeAll(async () => {
  proxy = await startFreezableProxy(7233);
  api = await startApi({ TEMPORAL_ADDRESS: proxy.address });
  const created = await tenantWithAgent(api);
  tenant = created.tenant;
  sessionId = (await createSession(created.client, created.agent.id)).id;
});
afterAll(async () => {
  await api.close();
  await proxy.close();
});

const sendMessage = (text: string) =>
  fetch(`${api.url}/v1/sessions/${sessionId}/events`, {
    method: 'POST',
    headers: bearer(tenant.key),
    body: JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] }),
  });

test('a message sent while Temporal does not answer: 200 within the signal deadline, stored unprocessed for the reconciler', async () => {
  // Connected and signalled through the proxy first.
  expect((await sendMessage('before the partition')).status).toBe(200);
  proxy.frozen = true;
  const started = Date.now();
  const response = await sendMessage('during the partition');
  const took = Date.now() - started;
  expect(response.status).toBe(200);
  expect(took).toBeLessThan(SIGNAL_DEADLINE_MS + 2000);
  const { rows } = await api.deps.db.query(`SELECT processed_at FROM session_events WHERE session_id = $1 AND type = 'user.message' AND content::text LIKE '%during the partition%'`, [sessionId]);
  expect(rows).toEqual([{ processed_at: null }]);
  expect(api.logs.some((line) => line.includes('session signal failed after commit; left for the reconciler'))).toBe(true);
});

test('the reconciler stops its pass at the first signal Temporal does not answer, instead of waiting out each one', async () => {
  // (Still partitioned: the message above is unprocessed, as may be other files' sessions.)
  expect(proxy.frozen).toBe(true);
  const started = Date.now();
  expect(await reconcileOnce(api.deps, 0)).toBe(0);
  expect(Date.now() - started).toBeLessThan(2 * SIGNAL_DEADLINE_MS);
  expect(api.logs.filter((line) => line.includes('reconcile signal failed: Temporal unreachable'))).toHaveLength(1);
  // (No pass once Temporal answers again: it would signal other test files' sessions too, from
  // this file's task queue.)
});
