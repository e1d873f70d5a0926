import Router from '@koa/router';
import type { Pool } from 'pg';
import { PLATFORM_PAGE_DEFAULT, SiteListQuerySchema, UuidSchema } from '../../domain/platform';
import { findPlatformSite, listPlatformSites } from '../../store/platform';
import { platformForbidden, platformNotFound } from '../errors';
import { parsePathParam, parsePlatform } from '../middleware';
import type { PlatformContext, PlatformState } from '../types';

/** GET /v1/sites and GET /v1/sites/{site_id}: the sites of the user's accounts. */
export function platformSitesRouter(db: Pool): Router<PlatformState, PlatformContext> {
  const router = new Router<PlatformState, PlatformContext>();

  router.get('/v1/sites', async (ctx) => {
    const query = parsePlatform(SiteListQuerySchema, Object.fromEntries(new URLSearchParams(ctx.querystring)), 'site', 'query');
    const user = ctx.state.user!;
    if (query.account_id && !user.accountIds.includes(query.account_id)) throw platformForbidden('account', 'you are not authorized for this account');
    const limit = query.limit ?? PLATFORM_PAGE_DEFAULT;
    const offset = query.offset ?? 0;
    const { count, results } = await listPlatformSites(db, query.account_id ? [query.account_id] : user.accountIds, limit, offset);
    const page = (at: number) => {
      const params = new URLSearchParams({ limit: String(limit), offset: String(at) });
      if (query.account_id) params.set('account_id', query.account_id);
      return `/v1/sites?${params}`;
    };
    ctx.body = {
      previous: offset > 0 ? page(Math.max(0, offset - limit)) : null,
      next: offset + limit < count ? page(offset + limit) : null,
      count,
      results,
    };
  });

  router.get('/v1/sites/:site_id', async (ctx) => {
    const id = parsePathParam(UuidSchema, ctx.params.site_id, 'site', 'site_id');
    const site = await findPlatformSite(db, id);
    // A site of another account answers exactly like an absent one.
    if (!site || !ctx.state.user!.accountIds.includes(site.account.id)) throw platformNotFound('site');
    ctx.body = site;
  });
  return router;
}
