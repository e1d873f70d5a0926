import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating once a second, so cancellation (an interrupt, a run
 * timeout) reaches the activity and a dead worker is noticed within the heartbeat timeout
 * (every activity of a run is scheduled with one).
 */
export async function heartbeating<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), 1000);
  try {
    return await work(context.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
