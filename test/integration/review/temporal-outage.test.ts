import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startApi, type TestApi } from '../../support/harness';
import { createSession, tenantWithAgent } from '../sessions/support';
import { bearer, type Tenant } from '../../support/factories';
import { SIGNAL_DEADLINE_MS } from '../../../src/temporal/session-signals';

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
let proxy: Server;
let frozen = false;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // A TCP proxy to the dev server that can stop forwarding without closing anything.
  proxy = createServer((client) => {
    const upstream = connect(7233, '127.0.0.1');
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('data', (chunk) => frozen || to.write(chunk));
      from.on('error', () => undefined);
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  api = await startApi({ TEMPORAL_ADDRESS: `127.0.0.1:${(proxy.address() as AddressInfo).port}` });
  const created = await tenantWithAgent(api);
  tenant = created.tenant;
  sessionId = (await createSession(created.client, created.agent.id)).id;
});
afterAll(async () => {
  await api.close();
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => proxy.close(resolve));
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
  frozen = true;
  const started = Date.now();
  const response = await sendMessage('during the partition');
  const took = Date.now() - started;
  expect(response.status).toBe(200);
  expect(took).toBeLessThan(SIGNAL_DEADLINE_MS + 2000);
  const { rows } = await api.deps.db.query(`SELECT processed_at FROM session_events WHERE session_id = $1 AND type = 'user.message' AND content::text LIKE '%during the partition%'`, [sessionId]);
  expect(rows).toEqual([{ processed_at: null }]);
  expect(api.logs.some((line) => line.includes('session signal failed after commit; left for the reconciler'))).toBe(true);
});
