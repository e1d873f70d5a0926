import type { Pool } from 'pg';
import type { Logger } from '../logger';
import { onPoolEnding } from '../store/db';
import { API_KEY_REVOKED_CHANNEL, findApiKeyByHash, onApiKeyRevoked, touchApiKey, type ApiKeyRecord } from '../store/api-keys';
import { invalidationFeedFor, type InvalidationFeed } from './invalidation-feed';

/**
 * Per-process cache of API key lookups, so an authenticated request needs no database
 * round trip for its key.
 *
 * Revocation stays immediate: revokeApiKey issues a NOTIFY in the revoking transaction and
 * every api process LISTENs for it (invalidation-feed.ts), dropping the entry when the
 * revocation commits; a revocation made through this process drops it directly. The cache
 * is used only while the LISTEN is known to be active: when the listener connection
 * fails, the cache is emptied and every lookup goes to the database until it is back. A
 * bounded TTL is the safety net on top.
 *
 * What remains is the notification's delivery time: the listening backend is signalled at
 * commit and writes to an idle socket, well under a millisecond on one host; a request
 * that arrives at another instance within that time of the revocation's commit was, in
 * effect, concurrent with it.
 */
export const API_KEY_CACHE_TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;
/** last_used_at is recorded at most once a minute per key (the SQL guards it as well). */
const TOUCH_INTERVAL_MS = 60_000;

interface Entry {
  key: ApiKeyRecord;
  expiresAt: number;
}

export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>(); // by hex SHA-256 of the secret
  private readonly hashesById = new Map<string, string>();
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly pool: Pool,
    private readonly feed: InvalidationFeed,
    private readonly now: () => number = Date.now,
  ) {
    const unsubscribe = onApiKeyRevoked((id) => {
      feed.bump();
      this.forget(id);
    });
    feed.on(API_KEY_REVOKED_CHANNEL, (id) => this.forget(id));
    feed.onReset(() => this.clear());
    onPoolEnding(pool, unsubscribe);
  }

  /** The key with this SHA-256 digest (active or revoked), or undefined when there is none. */
  async lookup(hash: Buffer): Promise<ApiKeyRecord | undefined> {
    const hex = hash.toString('hex');
    const cached = this.entries.get(hex);
    if (cached && this.feed.listening && cached.expiresAt > this.now()) return cached.key;
    if (cached) this.drop(hex);

    const epoch = this.feed.epoch;
    const key = await findApiKeyByHash(this.pool, hash);
    // Unknown keys are not cached (nothing to invalidate if one were created later). A
    // lookup that overlapped a revocation or a listener reconnect may have read the row
    // before the change committed: it answers this request only.
    if (key && this.feed.listening && epoch === this.feed.epoch) this.store(hex, key);
    return key;
  }

  /** Records use at most once a minute per key and process; never delays the request. */
  touch(id: string): void {
    const now = this.now();
    const last = this.touchedAt.get(id);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    if (this.touchedAt.size >= MAX_ENTRIES) this.touchedAt.clear();
    this.touchedAt.set(id, now);
    void touchApiKey(this.pool, id).catch(() => this.touchedAt.delete(id));
  }

  forget(id: string): void {
    const hex = this.hashesById.get(id);
    if (hex) this.drop(hex);
  }

  private store(hex: string, key: ApiKeyRecord): void {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    this.entries.set(hex, { key, expiresAt: this.now() + API_KEY_CACHE_TTL_MS });
    this.hashesById.set(key.id, hex);
  }

  private drop(hex: string): void {
    const entry = this.entries.get(hex);
    this.entries.delete(hex);
    if (entry) this.hashesById.delete(entry.key.id);
  }

  private clear(): void {
    this.entries.clear();
    this.hashesById.clear();
  }
}

const caches = new WeakMap<Pool, ApiKeyCache>();

/** The cache of this pool's process (one per Deps; tests start several api instances in one process). */
export function apiKeyCacheFor(pool: Pool, connectionString: string, logger: Logger): ApiKeyCache {
  let cache = caches.get(pool);
  if (!cache) {
    cache = new ApiKeyCache(pool, invalidationFeedFor(pool, connectionString, logger));
    caches.set(pool, cache);
  }
  return cache;
}
