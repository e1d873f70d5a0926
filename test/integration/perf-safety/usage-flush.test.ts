import { Pool } from 'pg';
import { chargeUsage } from '../../../src/billing/usage';
import { closeDeps, createDeps } from '../../../src/deps';
import { createLogger } from '../../../src/logger';
import { testConfig, uniqueId } from '../../support/config';
import { createTenant, usageRow } from '../../support/factories';

/**
 * Metering is written after the response, in batches at most every few milliseconds, so at
 * shutdown rows can still be queued in memory. closeDeps writes them before ending the pool.
 */
test('usage rows queued behind the batch interval are written when the process shuts down', async () => {
  const config = testConfig();
  const deps = createDeps(config, createLogger({ level: 'silent' }));
  const observer = new Pool({ connectionString: config.DATABASE_URL, max: 1 });
  try {
    const tenant = await createTenant(deps.db, { credits: 1_000n });
    const requestIds = Array.from({ length: 5 }, () => uniqueId('req_'));
    // The first row starts a statement at once; the others wait for the next interval.
    const writes = requestIds.map((requestId) => chargeUsage(deps.db, usageRow(tenant.projectId, { requestId })));
    await closeDeps(deps);
    await Promise.all(writes);
    const { rows } = await observer.query('SELECT count(*)::int AS n FROM usage_records WHERE request_id = ANY($1)', [requestIds]);
    expect(rows[0].n).toBe(5);
  } finally {
    await observer.end();
  }
});
