import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import type { Deps } from '../deps';
import { continueWhenBodyIsRead } from '../read-body';
import { PlatformError } from './errors';
import { basicAuth, platformBasics, platformRateLimit } from './middleware';
import { PLATFORM_OPENAPI } from './openapi';
import { platformAppsRouter } from './routes/apps';
import { platformSitesRouter } from './routes/sites';
import type { PlatformContext, PlatformState } from './types';

/**
 * The platform API: its own Koa app on PLATFORM_PORT. Order: request id + error envelope +
 * access log → public OpenAPI document → rate limit → HTTP Basic → resource routers.
 */
export function createPlatformApp(
  deps: Pick<Deps, 'db' | 'logger'>,
  limits: { perSecond: number; burst: number } | null = null,
): Koa<PlatformState, PlatformContext> {
  const app = new Koa<PlatformState, PlatformContext>();
  app.silent = true;
  app.use(platformBasics(deps.logger));

  const open = new Router<PlatformState, PlatformContext>();
  open.get('/v1/openapi.json', (ctx) => {
    ctx.body = PLATFORM_OPENAPI;
  });
  open.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  app.use(open.routes());
  // A known open path with another method is 405 before any credentials are asked for.
  app.use(methodNotAllowed([open]));

  // Before HTTP Basic, so a flood of guesses is refused without a scrypt check each.
  if (limits) app.use(platformRateLimit(limits.perSecond, limits.burst));
  app.use(basicAuth(deps.db));
  const routers = [platformSitesRouter(deps.db), platformAppsRouter(deps.db)];
  for (const router of routers) app.use(router.routes());
  app.use(methodNotAllowed(routers));
  app.use((ctx) => {
    throw new PlatformError(404, 'Not Found', [{ resource: 'route', type: 'value_unavailable', message: `no route ${ctx.method} ${ctx.path}` }]);
  });
  return app;
}

/** The platform API's HTTP server (`Expect: 100-continue` answered once the body is read). */
export function createPlatformServer(deps: Pick<Deps, 'db' | 'logger'>, limits: { perSecond: number; burst: number } | null = null): Server {
  const server = createServer(createPlatformApp(deps, limits).callback());
  continueWhenBodyIsRead(server);
  return server;
}

/** 405 with `Allow` for a path one of the routers serves under other methods; else next. */
function methodNotAllowed(routers: Array<Router<PlatformState, PlatformContext>>): Koa.Middleware<PlatformState, PlatformContext> {
  return async (ctx, next) => {
    const allowed = new Set<string>();
    for (const router of routers) for (const layer of router.stack) if (layer.match(ctx.path)) layer.methods.forEach((m) => allowed.add(m));
    if (allowed.size > 0) throw new PlatformError(405, 'Method Not Allowed', undefined, { Allow: [...allowed].join(', ') });
    await next();
  };
}
