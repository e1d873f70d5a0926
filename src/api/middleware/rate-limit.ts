import { createHash } from 'node:crypto';
import type { Deps } from '../../deps';
import { ApiError, rateLimited } from '../errors';
import { bearerFrom, credentialIdentity } from '../../auth/middleware';
import type { Middleware } from '../types';

/**
 * Per-credential token bucket (rate RATE_LIMIT_PER_SECOND, burst RATE_LIMIT_BURST).
 * It runs before authentication, keyed by a digest of the presented credential (or the
 * client address when there is none), so floods are refused without database work.
 * Buckets live in this process: a deployment with several api instances enforces the
 * shared limit at the edge (load balancer), as the spec describes; this is the
 * per-instance backstop.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; updated: number }>();
  constructor(private readonly ratePerSecond: number, private readonly burst: number, private readonly now = () => performance.now()) {}

  /** Takes one token; returns 0 when allowed, else the seconds to wait. */
  take(key: string): number {
    const bucket = this.refilled(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > 100_000) this.evictFull();
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return this.waitFor(bucket.tokens);
  }

  /** Gives back a token taken ahead of an outcome that turned out not to cost one. */
  refund(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.burst, bucket.tokens + 1);
  }

  private refilled(key: string): { tokens: number; updated: number } {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, updated: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updated) / 1000) * this.ratePerSecond);
    bucket.updated = now;
    return bucket;
  }

  private waitFor(tokens: number): number {
    return this.ratePerSecond > 0 ? Math.ceil((1 - tokens) / this.ratePerSecond) : 60;
  }

  /** Full buckets carry no state worth keeping. */
  private evictFull(): void {
    for (const [key, bucket] of this.buckets) if (bucket.tokens >= this.burst - 1) this.buckets.delete(key);
  }
}

/** Per api process (deps): the buckets, and digests of credentials authentication accepted lately. */
const stateByDeps = new WeakMap<Deps, { buckets: TokenBuckets; accepted: Set<string> }>();

export function rateLimit(deps: Deps): Middleware {
  if (!deps.config.RATE_LIMIT_ENABLED) return (_ctx, next) => next();
  let state = stateByDeps.get(deps);
  if (!state) {
    state = { buckets: new TokenBuckets(deps.config.RATE_LIMIT_PER_SECOND, deps.config.RATE_LIMIT_BURST), accepted: new Set() };
    stateByDeps.set(deps, state);
  }
  const { buckets: shared, accepted } = state;
  // (A Set keeps insertion order: the least recently accepted go first.)
  const remember = (key: string) => {
    accepted.delete(key);
    accepted.add(key);
    if (accepted.size > 10_000) accepted.delete(accepted.values().next().value!);
  };
  return async (ctx, next) => {
    // Keyed by the credential itself, as authentication reads it: spacing or the scheme's case
    // in the header must not make a fresh bucket.
    const authorization = ctx.get('authorization');
    const credential = (authorization ? (bearerFrom(authorization) ?? authorization) : '') || ctx.get('x-api-key').trim();
    const key = credential ? createHash('sha256').update(credentialIdentity(credential)).digest('base64') : `ip:${ctx.ip}`;
    // A fresh made-up credential per request would get a fresh bucket (and cost a database
    // lookup each): a credential not accepted lately also takes a token from a bucket of the
    // client address before it is looked up, given back unless it is refused (401). So refused
    // credentials, however many at once, get no more lookups than that bucket allows, and
    // credentials accepted lately pass regardless (one client's bad keys do not lock out the
    // others behind the same address).
    const refusedKey = `refused:${ctx.ip}`;
    const unproven = credential !== '' && !accepted.has(key);
    if (unproven) {
      const wait = shared.take(refusedKey);
      if (wait > 0) throw rateLimited(wait);
    }
    const wait = shared.take(key);
    if (wait > 0) {
      if (unproven) shared.refund(refusedKey);
      throw rateLimited(wait);
    }
    // Refused: a 401 with its challenge, thrown (authenticate) or answered (the OAuth routes
    // render their own). (A provider's 401 relayed as such is about the gateway's provider key.)
    let refused = false;
    try {
      await next();
      refused = ctx.status === 401 && ctx.response.get('WWW-Authenticate') !== '';
    } catch (error) {
      refused = error instanceof ApiError && error.status === 401;
      throw error;
    } finally {
      if (refused) accepted.delete(key); // (a key revoked since)
      else {
        if (unproven) shared.refund(refusedKey);
        // Remembered only once authentication resolved it (a 400 before any check proves nothing).
        if (credential && ctx.state.principal) remember(key);
      }
    }
  };
}
