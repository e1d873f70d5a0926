import type { Pool } from 'pg';
import { creditsExhausted } from '../api/errors';
import { invalidationFeedFor, type InvalidationFeed } from '../auth/invalidation-feed';
import type { Logger } from '../logger';
import { getBalanceNano } from './credits';

/** Safety net only: a balance crossing zero is announced at once (migration 050). */
export const POSITIVE_BALANCE_TTL_MS = 5_000;
const MAX_PROJECTS = 10_000;

/**
 * The credit check of metered gateway requests without a database read per request.
 *
 * The rule is assertCredits': a request is refused when the balance is not positive, so
 * concurrent requests overshoot only by what is in flight. The process remembers which
 * projects it last read as positive; every change that moves a balance across zero, by
 * any writer in any process, sends a NOTIFY from its own transaction (migration 050) and
 * the note is dropped when that commits. Projects not known positive (exhausted, unknown,
 * expired, or while the listener is down) are read from the database on every request,
 * so a refused project stays refused until a grant commits, and a grant is seen by the
 * next request.
 */
export class CreditAdmission {
  private readonly positiveUntil = new Map<string, number>();

  constructor(private readonly db: Pool, private readonly feed: InvalidationFeed, private readonly now: () => number = Date.now) {
    feed.on('project_credits_changed', (projectId) => this.positiveUntil.delete(projectId));
    feed.onReset(() => this.positiveUntil.clear());
  }

  async admit(projectId: string): Promise<void> {
    const until = this.positiveUntil.get(projectId);
    if (until !== undefined && this.feed.listening && until > this.now()) return;
    if (until !== undefined) this.positiveUntil.delete(projectId);

    const epoch = this.feed.epoch;
    if ((await getBalanceNano(this.db, projectId)) <= 0n) throw creditsExhausted();
    // A read that overlapped a notification may predate the change: it admits this request only.
    if (!this.feed.listening || epoch !== this.feed.epoch) return;
    if (this.positiveUntil.size >= MAX_PROJECTS) this.positiveUntil.clear();
    this.positiveUntil.set(projectId, this.now() + POSITIVE_BALANCE_TTL_MS);
  }
}

const admissions = new WeakMap<Pool, CreditAdmission>();

export function creditAdmissionFor(pool: Pool, connectionString: string, logger: Logger): CreditAdmission {
  let admission = admissions.get(pool);
  if (!admission) {
    admission = new CreditAdmission(pool, invalidationFeedFor(pool, connectionString, logger));
    admissions.set(pool, admission);
  }
  return admission;
}
