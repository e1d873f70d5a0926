import { Client, type Pool } from 'pg';
import type { Logger } from '../logger';
import { onPoolEnding } from './db';

/**
 * One LISTEN connection per api process for `session_events` notifications (appendEvents
 * sends the session id as payload on commit), fanned out to the open streams of that
 * session. Streams wake up and read the log themselves, so a missed or coalesced
 * notification loses nothing. The connection opens with the first subscriber and closes
 * LINGER_MS after the last one left (a client that opens a stream per message would
 * otherwise cost Postgres a new backend each time), or when the api's pool ends; if it
 * drops, every stream is told so it can end and the client resumes with Last-Event-ID.
 */
export const SESSION_EVENTS_CHANNEL = 'session_events';

interface Subscriber {
  onAppend: () => void;
  onLost: () => void;
}

const LINGER_MS = 30_000;

export class SessionEventHub {
  private client?: Client;
  private connecting?: Promise<Client>;
  private lingering?: NodeJS.Timeout;
  private closed = false;
  private readonly subscribers = new Map<string, Set<Subscriber>>();

  constructor(pool: Pool, private readonly databaseUrl: string, private readonly log: Logger) {
    onPoolEnding(pool, () => this.close());
  }

  /** Closes the connection now and ends the open streams; later subscriptions fail. */
  close(): void {
    this.closed = true;
    this.disconnect();
    const all = [...this.subscribers.values()].flatMap((set) => [...set]);
    this.subscribers.clear();
    for (const subscriber of all) subscriber.onLost();
  }

  /** Starts listening for the session; resolves once LISTEN is active. Returns the unsubscribe function. */
  async subscribe(sessionId: string, subscriber: Subscriber): Promise<() => void> {
    if (this.closed) throw new Error('the session event hub is closed');
    clearTimeout(this.lingering);
    this.lingering = undefined;
    let set = this.subscribers.get(sessionId);
    if (!set) this.subscribers.set(sessionId, (set = new Set()));
    set.add(subscriber);
    try {
      await this.connect();
    } catch (error) {
      this.remove(sessionId, subscriber);
      throw error;
    }
    return () => this.remove(sessionId, subscriber);
  }

  private remove(sessionId: string, subscriber: Subscriber): void {
    const set = this.subscribers.get(sessionId);
    set?.delete(subscriber);
    if (set && set.size === 0) this.subscribers.delete(sessionId);
    if (this.subscribers.size === 0 && !this.lingering) {
      this.lingering = setTimeout(() => {
        this.lingering = undefined;
        if (this.subscribers.size === 0) this.disconnect();
      }, LINGER_MS).unref();
    }
  }

  private connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting) {
      const client = new Client({ connectionString: this.databaseUrl, application_name: 'gateway-event-streams' });
      this.connecting = (async () => {
        client.on('notification', (message) => {
          if (message.channel !== SESSION_EVENTS_CHANNEL || !message.payload) return;
          for (const subscriber of this.subscribers.get(message.payload) ?? []) subscriber.onAppend();
        });
        client.on('error', (error) => this.lost(client, error));
        client.on('end', () => this.lost(client));
        await client.connect();
        // A lingering listener must never keep a process alive that is otherwise done.
        (client as Client & { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
        await client.query(`LISTEN ${SESSION_EVENTS_CHANNEL}`);
        if (this.closed) throw new Error('the session event hub is closed');
        this.client = client;
        return client;
      })().catch((error) => {
        client.end().catch(() => undefined);
        throw error;
      }).finally(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  private lost(client: Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (error) this.log.warn({ err: error }, 'session event listener lost its connection');
    const all = [...this.subscribers.values()].flatMap((set) => [...set]);
    this.subscribers.clear();
    for (const subscriber of all) subscriber.onLost();
  }

  private disconnect(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
    const client = this.client;
    this.client = undefined;
    client?.end().catch(() => undefined);
  }
}
