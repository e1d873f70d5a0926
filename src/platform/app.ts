import type { Server } from 'node:http';
import { createRefusingServer } from '../net/parser-errors';
import { refuseRepeatedCredentials, repeatedCredentialMessage } from '../net/credential-headers';
import { nonUtf8QueryMessage, refuseNonUtf8Query } from '../net/query-text';
import Koa from 'koa';
import Router from '@koa/router';
import type { Deps } from '../deps';
import { PLATFORM_DOCS_URL, PlatformError } from './errors';
import { basicAuth, platformBasics, platformRateLimit } from './middleware';
import { PLATFORM_OPENAPI } from './openapi';
import { platformAppsRouter } from './routes/apps';
import { platformSitesRouter } from './routes/sites';
import type { PlatformContext, PlatformState } from './types';

/**
 * The platform API: its own Koa app on PLATFORM_PORT. Order: request id + error envelope +
 * access log → public OpenAPI document → rate limit → HTTP Basic → 405 for a documented path
 * called with another method → resource routers → 404.
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
  app.use(methodNotAllowed((path) => routedMethods(open, path)));

  app.use(
    refuseRepeatedCredentials(
      (header) => new PlatformError(400, 'Bad Request', [{ resource: 'request', field: header, type: 'invalid_value', message: repeatedCredentialMessage(header) }]),
    ),
  );
  app.use(refuseNonUtf8Query((parameter) => new PlatformError(400, 'Bad Request', [{ resource: 'request', field: parameter, type: 'invalid_value', message: nonUtf8QueryMessage(parameter) }])));
  // Before HTTP Basic, so a flood of guesses is refused without a scrypt check each.
  if (limits) app.use(platformRateLimit(limits.perSecond, limits.burst));
  app.use(basicAuth(deps.db));
  // Before the routers: their `:id` parameters also take `id:verb`, so a router alone would
  // send GET …/{environment}:clearCache to the GET environment route.
  app.use(methodNotAllowed(documentedMethods));
  for (const router of [platformSitesRouter(deps.db), platformAppsRouter(deps.db)]) app.use(router.routes());
  app.use((ctx) => {
    throw new PlatformError(404, 'Not Found', [{ resource: 'route', type: 'value_unavailable', message: `no route ${ctx.method} ${ctx.path}` }]);
  });
  return app;
}

/** The platform API's HTTP server (`Expect: 100-continue` answered once the body is read). */
export function createPlatformServer(deps: Pick<Deps, 'db' | 'logger'>, limits: { perSecond: number; burst: number } | null = null): Server {
  // In the platform API's own error shape (`{message, errors}`).
  return createRefusingServer(createPlatformApp(deps, limits).callback(), ({ message }) => ({
    message,
    documentation_url: PLATFORM_DOCS_URL,
    errors: [{ resource: 'request', type: 'invalid_value', message }],
  }));
}

/** 405 with `Allow` when the path is known (`allowed` gives its methods) and the method is not among them; else next. */
function methodNotAllowed(allowed: (path: string) => string[] | undefined): Koa.Middleware<PlatformState, PlatformContext> {
  return async (ctx, next) => {
    const methods = allowed(ctx.path);
    if (methods && !methods.includes(ctx.method)) throw new PlatformError(405, 'Method Not Allowed', undefined, { Allow: methods.join(', ') });
    await next();
  };
}

function routedMethods(router: Router<PlatformState, PlatformContext>, path: string): string[] | undefined {
  const methods = new Set(router.stack.filter((layer) => layer.match(path)).flatMap((layer) => layer.methods));
  return methods.size > 0 ? [...methods] : undefined;
}

/**
 * The OpenAPI document is the table of what each path allows: `{param}` is one path segment
 * without ':' (so `{environment}` and `{environment}:clearCache` are different paths). Matched
 * as the routers match: segments percent-decoded, case-insensitive, a trailing '/' ignored.
 */
const DOCUMENTED = Object.entries(PLATFORM_OPENAPI.paths).map(([template, operations]) => ({
  segments: template.split('/').map((segment) => new RegExp(`^${segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/:]+')}$`, 'i')),
  methods: Object.keys(operations).flatMap((method) => (method === 'get' ? ['HEAD', 'GET'] : [method.toUpperCase()])),
}));
function documentedMethods(path: string): string[] | undefined {
  const segments = path.replace(/(.)\/$/, '$1').split('/').map(decodeSegment);
  return DOCUMENTED.find((doc) => doc.segments.length === segments.length && doc.segments.every((re, i) => re.test(segments[i]!)))?.methods;
}
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes: left for the routers to refuse
  }
}
