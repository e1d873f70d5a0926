import Router from '@koa/router';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import type { Deps } from '../../deps';
import type { Principal } from '../../auth/principal';
import { authenticate, bearerFrom, credentialIdentity, resolveCredential } from '../../auth/middleware';
import { hasAccess } from '../../auth/scopes';
import { queryBoolean } from '../../domain/fields';
import { shutdownSignals } from '../../net/graceful-close';
import { eventsAfterSeq, findEventPosition, hiddenWithoutThinking, lastEventSeq } from '../../store/event-queries';
import { SessionEventHub } from '../../store/event-notifications';
import { presentEvent } from '../../store/events';
import { ApiError, badRequest } from '../errors';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput, pathIds, ResourceIdSchema } from '../validate';
import { EVENT_CREDENTIALS } from './events';
import { loadAccessibleSession } from './session-access';

const StreamQuerySchema = z.strictObject({ include_thinking: queryBoolean.default(false) });
// Event ids are bounded like the listing's after_id; a longer header is refused unread.
const LastEventIdSchema = z.strictObject({ 'Last-Event-ID': z.string().trim().max(64, 'not an event id').optional() });

/** Client reconnection delay announced to EventSource clients (ms). */
const RETRY_MS = 3000;

const hubs = new WeakMap<Deps, SessionEventHub>();
function hubFor(deps: Deps): SessionEventHub {
  let hub = hubs.get(deps);
  if (!hub) hubs.set(deps, (hub = new SessionEventHub(deps.db, deps.config.DATABASE_URL, deps.logger)));
  return hub;
}

/** Open streams per credential (by its digest, never the credential itself). */
class StreamSlots {
  private readonly open = new Map<string, number>();
  constructor(private readonly max: number) {}

  /** Takes a slot for the credential; returns its release (idempotent), or undefined when none is free. */
  take(credential: string): (() => void) | undefined {
    const key = createHash('sha256').update(credential).digest('base64');
    const count = this.open.get(key) ?? 0;
    if (count >= this.max) return undefined;
    this.open.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
  }
}

const slots = new WeakMap<Deps, StreamSlots>();
function streamSlots(deps: Deps): StreamSlots {
  let found = slots.get(deps);
  if (!found) slots.set(deps, (found = new StreamSlots(deps.config.EVENT_STREAM_MAX_PER_CREDENTIAL)));
  return found;
}

/**
 * GET /v1beta1/sessions/{id}/events/stream: Server-Sent Events of the events appended
 * after the stream opens, or after the event named by `Last-Event-ID`. Each message has
 * `id: <event id>` and `data: <event JSON>` (the listing's shape); comment lines keep idle
 * connections open through proxies.
 */
export function eventStreamRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  const guard = [rateLimit(deps), authenticate(deps, { scope: 'sessions', accept: EVENT_CREDENTIALS }), pathIds({ session_id: { schema: ResourceIdSchema, what: 'session' } })];

  router.get('/v1beta1/sessions/:session_id/events/stream', ...guard, async (ctx) => {
    const query = parseInput(StreamQuerySchema, ctx.query, 'query');
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    const lastEventId = parseInput(LastEventIdSchema, { 'Last-Event-ID': ctx.get('last-event-id') || undefined }, 'header')['Last-Event-ID'];
    let resumeSeq: string | undefined;
    if (lastEventId) {
      resumeSeq = (await findEventPosition(deps.db, session.id, lastEventId))?.seq;
      if (!resumeSeq) throw badRequest(`Last-Event-ID: '${lastEventId}' is not an event of this session`, 'Last-Event-ID');
    }

    // What authenticated this request (the event routes take it only from Authorization).
    const token = bearerFrom(ctx.get('authorization')) ?? '';
    // Streams hold a connection each for as long as the client likes: one credential may hold
    // only so many, so a single key cannot use up the process's connections.
    const releaseSlot = streamSlots(deps).take(credentialIdentity(token));
    if (!releaseSlot) throw new ApiError(429, 'rate_limit_error', `at most ${deps.config.EVENT_STREAM_MAX_PER_CREDENTIAL} event streams may be open per credential; close one first`, { headers: { 'Retry-After': '1' } });
    const out = new PassThrough();
    // Every write checks `closed` first; should one still race the end, it must not become an
    // unhandled 'error' event, which would end the whole process. A client that leaves is how
    // streams normally end (Koa's pipe reports it as a premature close): not a failure.
    out.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ERR_STREAM_PREMATURE_CLOSE') ctx.state.log.warn({ err: error, session_id: session.id }, 'event stream write failed');
    });
    let accessCheckedAt = Date.now(); // loadAccessibleSession above
    let lastSeq = '0';
    let closed = false;
    let draining = Promise.resolve();
    let again = false;
    let keepAlive: NodeJS.Timeout | undefined;
    let unsubscribe: (() => void) | undefined;
    // A stream has no end of its own: at shutdown it ends at once, cleanly, and the client
    // reconnects (to another instance) with Last-Event-ID, as after any other ending.
    const { closing } = shutdownSignals(ctx.req);

    const close = () => {
      if (closed) return;
      closed = true;
      releaseSlot();
      clearInterval(keepAlive);
      unsubscribe?.();
      closing.removeEventListener('abort', close);
      out.end();
    };
    // Reads everything after lastSeq; notifications arriving meanwhile trigger one more pass.
    const drain = () => {
      if (closed) return;
      again = true;
      draining = draining.then(async () => {
        while (again && !closed) {
          again = false;
          for (;;) {
            const rows = await eventsAfterSeq(deps.db, session.id, lastSeq);
            // The credential is checked again before every delivery (a revoked key, an expired
            // browser token: revocation is immediate on streams too). API keys come from the
            // process cache (invalidated by NOTIFY) and browser tokens are verified in memory;
            // service and OAuth tokens cost one indexed lookup.
            if (rows.length > 0 && !(await credentialStillValid(deps, token))) return close();
            // Access is checked again before new events go out (at most every
            // EVENT_STREAM_ACCESS_RECHECK_MS, not per event): a session whose agent moved to
            // another project since the stream opened is no longer this caller's to read.
            if (rows.length > 0 && Date.now() - accessCheckedAt >= deps.config.EVENT_STREAM_ACCESS_RECHECK_MS) {
              if (!(await stillAccessible(deps, ctx.state.principal!, session.id))) return close();
              accessCheckedAt = Date.now();
            }
            for (const row of rows) {
              if (closed) return;
              if (query.include_thinking || !hiddenWithoutThinking(row)) {
                out.write(`id: ${row.id}\ndata: ${JSON.stringify(presentEvent(row, { includeThinking: query.include_thinking }))}\n\n`);
              }
              lastSeq = row.seq;
            }
            if (rows.length < 500) break;
          }
        }
      }).catch((error) => {
        ctx.state.log.warn({ err: error, session_id: session.id }, 'event stream read failed; closing the stream');
        close();
      });
    };

    try {
      // Listen before reading the baseline, so nothing appended in between is missed.
      unsubscribe = await hubFor(deps).subscribe(session.id, { onAppend: drain, onLost: close });
      lastSeq = resumeSeq ?? (await lastEventSeq(deps.db, session.id));
    } catch (error) {
      close(); // frees the slot and the subscription; the error handler answers
      throw error;
    }

    ctx.res.on('close', close);
    // A client that left while the stream was being set up: its 'close' has already fired.
    if (ctx.req.socket.destroyed) {
      close();
      return;
    }
    ctx.status = 200;
    // No `Connection` header of its own: Node says keep-alive on a persistent connection, and
    // close when the client asked for it or the server is shutting down.
    ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' });
    ctx.body = out;
    out.write(`retry: ${RETRY_MS}\n: stream open\n\n`);
    // Opened while the server was already closing (the request was in flight at the signal).
    if (closing.aborted) return close();
    closing.addEventListener('abort', close);
    // An idle stream whose credential was revoked or expired, or whose session was deleted (or
    // is no longer this caller's), is closed at its next keep-alive.
    keepAlive = setInterval(() => {
      const check = async () => (await credentialStillValid(deps, token)) && (await stillAccessible(deps, ctx.state.principal!, session.id));
      check().then((valid) => {
        if (closed) return; // the stream ended while the check ran
        if (valid) out.write(': keep-alive\n\n');
        else close();
      }, close);
    }, deps.config.EVENT_STREAM_KEEPALIVE_MS);
    drain();
  });

  return router;
}

async function credentialStillValid(deps: Deps, token: string): Promise<boolean> {
  try {
    return hasAccess(await resolveCredential(deps, token), 'sessions', 'read');
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return false;
    throw error;
  }
}

async function stillAccessible(deps: Deps, principal: Principal, sessionId: string): Promise<boolean> {
  try {
    await loadAccessibleSession(deps, principal, sessionId);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}
