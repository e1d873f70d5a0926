import { retryUnapplied, unreachedBackoffMs, UNREACHED_RETRY_FOR_MS } from '../../../src/billing/usage';
import { dataFault } from '../../../src/store/db-errors';

const failing = (errors: unknown[]) => {
  let calls = 0;
  const write = async () => {
    const error = errors[calls++];
    if (error) throw error;
  };
  return { write, calls: () => calls };
};
const noSleep = async () => undefined;

describe('retryUnapplied (metering writes)', () => {
  test('Postgres not reached (pool connect timeout, refused): retried with back-off until it answers', async () => {
    const slept: number[] = [];
    const { write, calls } = failing([new Error('timeout exceeded when trying to connect'), Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })]);
    await retryUnapplied(write, async (ms) => void slept.push(ms));
    expect(calls()).toBe(3);
    expect(slept).toEqual([250, 500]);
  });

  test('keeps trying for minutes (an outage of a few minutes loses no billing), then gives up', async () => {
    expect([0, 1, 2, 3, 4, 5, 6, 20].map(unreachedBackoffMs)).toEqual([250, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
    const slept: number[] = [];
    const unreached = Array.from({ length: 1000 }, () => new Error('timeout exceeded when trying to connect'));
    const { write, calls } = failing(unreached);
    await expect(retryUnapplied(write, async (ms) => void slept.push(ms))).rejects.toThrow(/timeout exceeded/);
    const total = slept.reduce((sum, ms) => sum + ms, 0);
    expect(total).toBeGreaterThanOrEqual(UNREACHED_RETRY_FOR_MS);
    expect(total).toBeLessThan(UNREACHED_RETRY_FOR_MS + 8000);
    expect(calls()).toBe(slept.length + 1);
  });

  test('a deadlock is retried at most three times; a connection lost mid-statement (it may have committed) is not retried', async () => {
    const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const twice = failing([deadlock(), deadlock()]);
    await retryUnapplied(twice.write, noSleep);
    expect(twice.calls()).toBe(3);
    await expect(retryUnapplied(failing([deadlock(), deadlock(), deadlock()]).write, noSleep)).rejects.toThrow(/deadlock/);
    const lost = failing([Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' })]);
    await expect(retryUnapplied(lost.write, noSleep)).rejects.toThrow(/terminated/);
    expect(lost.calls()).toBe(1);
  });
});

describe('dataFault (which failed usage batches are written again row by row)', () => {
  test('only a data or integrity error: a connection lost mid-statement may have committed the batch', () => {
    expect(dataFault(Object.assign(new Error('invalid input'), { code: '22P02' }))).toBe(true);
    expect(dataFault(Object.assign(new Error('violates foreign key'), { code: '23503' }))).toBe(true);
    expect(dataFault(Object.assign(new Error('Connection terminated unexpectedly'), {}))).toBe(false);
    expect(dataFault(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(false);
    expect(dataFault(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(false);
  });
});
