import Router from '@koa/router';
import { z } from 'zod';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { requireResourceProject } from '../../auth/tenancy';
import { BROWSER_TOKEN_DEFAULT_TTL_SECONDS, BROWSER_TOKEN_MAX_TTL_SECONDS, signBrowserToken } from '../../auth/tokens';
import { chars } from '../../domain/fields';
import { SESSION_LIMITS } from '../../domain/sessions';
import { findAgent } from '../../store/agents';
import { notFound } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput } from '../validate';

export const BrowserTokenRequestSchema = z.strictObject({
  agent_id: z.string().min(1).max(64),
  owner_id: chars(SESSION_LIMITS.ownerIdChars).refine((v) => v.length > 0, 'must not be empty').optional(),
  ttl_seconds: z.number().int().min(1).max(BROWSER_TOKEN_MAX_TTL_SECONDS).optional(),
});

/**
 * POST /v1/browser-tokens: a site's backend (service token) or a developer (API key)
 * mints a short-lived browser session token (scope `session_events`) bound to one agent
 * and optionally one visitor (`owner_id`), for a browser to use on the event routes.
 */
export function browserTokensRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.post('/v1/browser-tokens', rateLimit(deps), authenticate(deps, { scope: 'sessions' }), jsonBody(deps.config.BODY_LIMIT_BYTES), async (ctx) => {
    const input = parseInput(BrowserTokenRequestSchema, ctx.request.body);
    const principal = ctx.state.principal!;
    // (The route takes API keys and service tokens only: the token names its minter, and dies with it.)
    const agent = await findAgent(deps.db, input.agent_id);
    // (An absent agent pays the same project lookup as another project's: no timing hint either.)
    await requireResourceProject(deps.db, principal, agent?.project_id, 'agent');
    if (!agent) throw notFound('agent');
    const { token, expiresAt } = await signBrowserToken(
      deps.config,
      { accountId: principal.accountId, projectId: agent.project_id, agentId: agent.id, ownerId: input.owner_id, mintedBy: `${principal.method}:${principal.keyId}` },
      input.ttl_seconds ?? BROWSER_TOKEN_DEFAULT_TTL_SECONDS,
    );
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store'); // a bearer credential: no cache may keep it
    ctx.body = { token, expires_at: expiresAt.toISOString(), agent_id: agent.id, ...(input.owner_id ? { owner_id: input.owner_id } : {}) };
  });
  return router;
}
