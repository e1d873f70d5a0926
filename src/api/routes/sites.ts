import Router from '@koa/router';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { requireProjectAccess } from '../../auth/tenancy';
import { SITE_REGISTRATION_BODY_LIMIT_BYTES, SiteRegistrationSchema } from '../../domain/sites';
import { registerSite, SiteRegistrationConflict, SiteRegistrationRefused } from '../../store/site-registration';
import { badRequest, conflict, forbidden } from '../errors';
import { sitePrivateAddressesAllowed } from '../../config';
import { namesNonPublicHost } from '../../net/public-address';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput } from '../validate';

/**
 * POST /v1/sites: registers (201) or updates in place (200) the calling client's site.
 * Callers: a site's service token or an OAuth access token from Dynamic Client
 * Registration; both carry the account and the client_id the registration is for.
 */
export function sitesRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.post(
    '/v1/sites',
    rateLimit(deps),
    authenticate(deps, { accept: ['service_token', 'oauth'] }),
    jsonBody(SITE_REGISTRATION_BODY_LIMIT_BYTES),
    async (ctx) => {
      const principal = ctx.state.principal!;
      const input = parseInput(SiteRegistrationSchema, ctx.request.body);
      // The gateway calls the site (MCP abilities): it may not point into the gateway's own network.
      if (!sitePrivateAddressesAllowed(deps.config) && namesNonPublicHost(new URL(input.site_url))) {
        throw badRequest('site_url: must name a public host, not localhost or a loopback, private or link-local address', 'site_url');
      }
      if (!principal.clientId) throw forbidden('the credential does not identify a site client');
      if (input.project_id) await requireProjectAccess(deps.db, principal, input.project_id);
      const { site, created } = await registerSite(deps.db, deps.config.GATEWAY_SECRET, { accountId: principal.accountId, clientId: principal.clientId }, input).catch((error: unknown) => {
        if (error instanceof SiteRegistrationConflict) throw conflict(error.message);
        throw error instanceof SiteRegistrationRefused ? forbidden(error.message) : error;
      });
      ctx.status = created ? 201 : 200;
      ctx.set('Cache-Control', 'no-store'); // the body carries the site secret
      ctx.body = site;
    },
  );
  return router;
}
