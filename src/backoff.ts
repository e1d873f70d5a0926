// Waiting between attempts at something that failed for a while (Postgres, Elasticsearch).

/** Back-off before attempt `attempt + 1` (from 0): 250 ms doubling, at most `capMs`. */
export const backoffMs = (attempt: number, capMs: number): number => Math.min(250 * 2 ** attempt, capMs);

/** Waits `ms`, or less when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
