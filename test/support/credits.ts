import type { Deps } from '../../src/deps';
import { invalidationFeedFor } from '../../src/auth/invalidation-feed';

/**
 * Sets a project's balance the way another writer would (plain SQL), and waits until each
 * given api process has received the NOTIFY the change sends when it crosses zero
 * (migration 050). The notice travels on each api's own LISTEN connection, so "the next
 * request" after the commit is only guaranteed to see the change once it has arrived.
 */
export async function setBalanceNano(db: Deps['db'], projectId: string, balanceNano: bigint, apis: Deps[] = []): Promise<void> {
  const notices = apis.map(
    (deps) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no project_credits_changed notice for ${projectId} within 5 s`)), 5_000);
        invalidationFeedFor(deps.db, deps.config.DATABASE_URL, deps.logger).on('project_credits_changed', (id) => {
          if (id !== projectId) return;
          clearTimeout(timer);
          resolve();
        });
      }),
  );
  await db.query('UPDATE project_credits SET balance_nano = $2 WHERE project_id = $1', [projectId, balanceNano.toString()]);
  await Promise.all(notices);
}
