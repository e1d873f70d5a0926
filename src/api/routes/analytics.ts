import Router from '@koa/router';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { requireProjectAccess } from '../../auth/tenancy';
import { AnalyticsQuerySchema, buildResponse, resolveQuery } from '../../domain/analytics';
import { aggregateUsage } from '../../store/analytics';
import { badRequest } from '../errors';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput } from '../validate';

/**
 * GET /v1/analytics: credits and request counts of a project in time buckets. Account-level
 * identity-provider callers only; the project must belong to one of the caller's accounts.
 */
export function analyticsRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.get('/v1/analytics', rateLimit(deps), authenticate(deps, { accept: ['okta'] }), async (ctx) => {
    const input = parseInput(AnalyticsQuerySchema, queryObject(ctx.querystring), 'query');
    const query = resolveQuery(input, Math.floor(Date.now() / 1000));
    if (Array.isArray(query)) throw badRequest(`${query[0]}: ${query[1]}`, query[0]);
    await requireProjectAccess(deps.db, ctx.state.principal!, query.projectId);
    ctx.body = buildResponse(query, await aggregateUsage(deps.db, query));
  });
  return router;
}

/** A repeated parameter is an error, not a silent first-or-last pick. */
function queryObject(querystring: string): Record<string, string> {
  // No prototype: `toString` or `__proto__` are parameter names like any other (unknown ones).
  const out: Record<string, string> = Object.create(null);
  for (const [key, value] of new URLSearchParams(querystring)) {
    if (Object.hasOwn(out, key)) throw badRequest(`${key}: given more than once`, key);
    out[key] = value;
  }
  return out;
}
