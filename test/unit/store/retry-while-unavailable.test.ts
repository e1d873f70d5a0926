import { backoffMs } from '../../../src/backoff';
import { retryWhileDatabaseUnavailable } from '../../../src/store/db';

const unavailable = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

describe('retryWhileDatabaseUnavailable (idempotent writes during a Postgres outage)', () => {
  test('runs the work again while Postgres is unavailable, and returns its result', async () => {
    let calls = 0;
    const result = await retryWhileDatabaseUnavailable(
      async () => {
        if (++calls < 3) throw unavailable();
        return 'written';
      },
      { forMs: 5_000 },
    );
    expect(result).toBe('written');
    expect(calls).toBe(3);
  });

  test('any other error ends it at once', async () => {
    let calls = 0;
    const refused = Object.assign(new Error('duplicate key'), { code: '23505' });
    await expect(
      retryWhileDatabaseUnavailable(async () => {
        calls++;
        throw refused;
      }, { forMs: 5_000 }),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
  });

  test('gives up once its time is spent, with the last error', async () => {
    const started = Date.now();
    await expect(
      retryWhileDatabaseUnavailable(async () => {
        throw unavailable();
      }, { forMs: 600 }),
    ).rejects.toMatchObject({ code: '57P01' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  test('an aborted signal ends the pause and the retrying', async () => {
    const controller = new AbortController();
    let calls = 0;
    const attempt = retryWhileDatabaseUnavailable(
      async () => {
        calls++;
        throw unavailable();
      },
      { forMs: 60_000, signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 100);
    await expect(attempt).rejects.toMatchObject({ code: '57P01' });
    expect(calls).toBeLessThanOrEqual(3);
  });

  test('back-off doubles from 250 ms up to its cap', () => {
    expect([0, 1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, 4000))).toEqual([250, 500, 1000, 2000, 4000, 4000]);
  });
});
