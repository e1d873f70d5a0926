import Koa from 'koa';
import type Router from '@koa/router';
import type { Deps } from '../deps';
import { badRequest, methodNotAllowed, notFound } from './errors';
import { refuseRepeatedCredentials, repeatedCredentialMessage } from '../net/credential-headers';
import { nonUtf8QueryMessage, refuseNonUtf8Query } from '../net/query-text';
import { isOAuthPath } from './routes/oauth';
import { accessLog } from './middleware/access-log';
import { cors } from './middleware/cors';
import { errorHandler } from './middleware/error-handler';
import { requestId } from './middleware/request-id';
import { healthRouter } from './routes/health';
import { modelsRouter } from './routes/models';
import { chatCompletionsRouter } from './routes/chat-completions';
import { messagesRouter } from './routes/messages';
import { contentRouter } from './routes/content';
import { oauthRouter } from './routes/oauth';
import { sitesRouter } from './routes/sites';
import { analyticsRouter } from './routes/analytics';
import { mcpRouter } from './routes/mcp';
import { kbRouter } from './routes/kb';
import { agentsRouter } from './routes/agents';
import { sessionsRouter } from './routes/sessions';
import { eventsRouter } from './routes/events';
import { eventStreamRouter } from './routes/event-stream';
import { browserTokensRouter } from './routes/browser-tokens';
import type { AppContext, AppState } from './types';

export type AnyRouter = Router<AppState, AppContext>;

export interface AppOptions {
  /** Additional routers mounted after the product's own (tests use this for probe routes). */
  extraRouters?: AnyRouter[];
}

/**
 * The gateway's Koa application. Cross-cutting middleware runs in this visible order:
 * request id → access log → error envelope; then each resource's router, whose routes
 * chain rate limit → auth → body → handler themselves.
 */
export function createApp(deps: Deps, options: AppOptions = {}): Koa<AppState, AppContext> {
  const app = new Koa<AppState, AppContext>();
  app.proxy = false;
  app.silent = true; // errors are logged by errorHandler with the request id, not by Koa

  app.use(requestId(deps.logger));
  app.use(accessLog());
  app.use(errorHandler());

  const routers: AnyRouter[] = [
    healthRouter(deps),
    modelsRouter(deps),
    chatCompletionsRouter(deps),
    messagesRouter(deps),
    contentRouter(deps),
    kbRouter(deps),
    agentsRouter(deps),
    sessionsRouter(deps),
    eventsRouter(deps),
    eventStreamRouter(deps),
    browserTokensRouter(deps),
    oauthRouter(deps),
    sitesRouter(deps),
    analyticsRouter(deps),
    mcpRouter(deps),
    ...(options.extraRouters ?? []),
  ];
  /** The methods the routers serve on a path (none: an unknown path). */
  const methodsFor = (path: string): string[] => {
    const allowed = new Set<string>();
    for (const router of routers) {
      for (const layer of router.stack) if (layer.methods.length > 0 && layer.match(path)) layer.methods.forEach((m) => allowed.add(m));
    }
    return [...allowed];
  };
  // CORS first: every answer, a refusal included, is readable by a page.
  app.use(cors(methodsFor));
  app.use(refuseRepeatedCredentials((header, path) => (isOAuthPath(path) ? undefined : badRequest(repeatedCredentialMessage(header)))));
  // (OAuth's routes read no query.)
  app.use(refuseNonUtf8Query((parameter, path) => (isOAuthPath(path) ? undefined : badRequest(nonUtf8QueryMessage(parameter), parameter))));
  for (const router of routers) app.use(router.routes());
  // Nothing answered: 405 when the path exists under other methods, else 404.
  app.use((ctx) => {
    const allowed = methodsFor(ctx.path);
    if (allowed.length > 0) throw methodNotAllowed(allowed);
    throw notFound('route');
  });
  return app;
}
