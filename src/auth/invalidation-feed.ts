import { Client, type Pool } from 'pg';
import type { Logger } from '../logger';
import { onPoolEnding } from '../store/db';

/**
 * One LISTEN connection per api process (per pool), over which Postgres tells the
 * process's hot-path caches that what they hold changed: a key was revoked
 * (store/api-keys.ts revokeApiKey), a project's balance crossed zero (migration 050).
 * Notifications are sent by the writing transaction and delivered when it commits.
 *
 * Caches may serve entries only while `listening` is true: when the connection fails,
 * every cache is reset (notifications sent meanwhile would be missed) and `listening`
 * stays false, so lookups go to the database, until the connection and its LISTENs are
 * back. `epoch` changes with every notification and reset: a database read that started
 * in an older epoch may predate the change and must answer only its own request.
 */
export const CHANNELS = ['api_key_revoked', 'project_credits_changed'] as const;
export type Channel = (typeof CHANNELS)[number];
const RECONNECT_DELAY_MS = 1_000;

export class InvalidationFeed {
  listening = false;
  epoch = 0;
  private readonly handlers = new Map<Channel, Set<(payload: string) => void>>();
  private readonly resetHandlers = new Set<() => void>();
  private client: Client | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(pool: Pool, private readonly connectionString: string, private readonly logger: Logger) {
    onPoolEnding(pool, () => void this.close());
    this.connect();
  }

  on(channel: Channel, handler: (payload: string) => void): void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(handler);
  }

  /** Called whenever entries may have been missed: caches forget everything. */
  onReset(handler: () => void): void {
    this.resetHandlers.add(handler);
  }

  /** An invalidation learnt in-process (e.g. a revocation made through this process). */
  bump(): void {
    this.epoch++;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A reconnect scheduled by a lost connection must not fire after close.
    clearTimeout(this.reconnectTimer);
    this.reset();
    await this.client?.end().catch(() => undefined);
  }

  private reset(): void {
    this.listening = false;
    this.epoch++;
    for (const handler of this.resetHandlers) handler();
  }

  private connect(): void {
    if (this.closed) return;
    const client = new Client({ connectionString: this.connectionString, application_name: 'gateway-invalidations' });
    this.client = client;
    let failed = false;
    const fail = (error?: Error) => {
      if (failed) return;
      failed = true;
      this.reset();
      if (this.closed) return;
      this.logger.warn({ cause: error?.message }, 'cache invalidation listener lost; hot-path caches are bypassed until it is back');
      client.end().catch(() => undefined);
      this.reconnectTimer = setTimeout(() => this.connect(), RECONNECT_DELAY_MS).unref();
    };
    client.on('error', fail);
    client.on('end', () => fail());
    client.on('notification', (message) => {
      this.epoch++;
      const handlers = this.handlers.get(message.channel as Channel);
      if (handlers && message.payload) for (const handler of handlers) handler(message.payload);
    });
    client
      .connect()
      .then(() => {
        // The listener must never keep a process alive that is otherwise done.
        (client as Client & { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
        return client.query(CHANNELS.map((channel) => `LISTEN ${channel}`).join('; '));
      })
      .then(() => {
        if (failed || this.closed) return;
        this.epoch++;
        this.listening = true;
      })
      .catch((error: Error) => fail(error));
  }
}

const feeds = new WeakMap<Pool, InvalidationFeed>();

/** The feed of this pool (one per Deps; tests run several api instances in one process). */
export function invalidationFeedFor(pool: Pool, connectionString: string, logger: Logger): InvalidationFeed {
  let feed = feeds.get(pool);
  if (!feed) {
    feed = new InvalidationFeed(pool, connectionString, logger);
    feeds.set(pool, feed);
  }
  return feed;
}
