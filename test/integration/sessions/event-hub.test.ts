import { Client } from 'pg';
import { createLogger } from '../../../src/logger';
import { createPool } from '../../../src/store/db';
import { SessionEventHub } from '../../../src/store/event-notifications';
import { testConfig, uniqueId } from '../../support/config';

/**
 * The LISTEN connection behind event streams: shared, kept for a while after the last
 * stream leaves (so a client streaming one message at a time does not cost a Postgres
 * backend per message), and closed with the api's pool.
 */
const config = testConfig();
const logger = createLogger({ level: 'silent' });
const listenerPid = (hub: SessionEventHub) => (hub as unknown as { client?: { processID?: number } }).client?.processID;

async function eventually(check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met within 2 s');
}

test('a stream opened after the last one closed reuses the listening connection; the pool ending closes it and ends open streams', async () => {
  const pool = createPool(config.DATABASE_URL, 2);
  await pool.query('SELECT 1'); // the pool holds an idle client, as a serving api does
  const hub = new SessionEventHub(pool, config.DATABASE_URL, logger);
  try {
    const session = uniqueId('sesn_');
    let woken = 0;
    let lost = 0;
    const subscriber = { onAppend: () => woken++, onLost: () => lost++ };

    const unsubscribe = await hub.subscribe(session, subscriber);
    const pid = listenerPid(hub);
    expect(pid).toBeGreaterThan(0);
    await pool.query("SELECT pg_notify('session_events', $1)", [session]);
    await eventually(() => woken === 1);
    unsubscribe();

    // The next stream finds the same backend still listening.
    const again = await hub.subscribe(session, subscriber);
    expect(listenerPid(hub)).toBe(pid);
    await pool.query("SELECT pg_notify('session_events', $1)", [session]);
    await eventually(() => woken === 2);
    again();

    // A stream still open when the api shuts down is told, so it can end.
    await hub.subscribe(session, subscriber);
    await pool.end();
    await eventually(() => lost === 1);
    const probe = new Client({ connectionString: config.DATABASE_URL });
    await probe.connect();
    try {
      await eventually(async () => (await probe.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0);
    } finally {
      await probe.end();
    }
    await expect(hub.subscribe(session, subscriber)).rejects.toThrow(/closed/);
  } finally {
    hub.close();
    await pool.end().catch(() => undefined);
  }
});
