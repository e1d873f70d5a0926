import Router from '@koa/router';
import type { Deps } from '../../deps';
import type { AppContext, AppState } from '../types';

const CHECK_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (error) => { clearTimeout(timer); reject(error); },
    );
  });
}

/** Each dependency the api needs, checked independently and in parallel. */
export function readinessChecks(deps: Deps): Record<string, () => Promise<unknown>> {
  return {
    postgres: () => deps.db.query('SELECT 1'),
    elasticsearch: () => deps.search.cluster.health({ timeout: '1s' }, { requestTimeout: CHECK_TIMEOUT_MS, maxRetries: 0 }),
    temporal: () => deps.temporal.checkHealth(),
  };
}

export function healthRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const checks = readinessChecks(deps);
    const names = Object.keys(checks);
    const results = await Promise.allSettled(names.map((name) => withTimeout(checks[name]!(), CHECK_TIMEOUT_MS)));
    const services: Record<string, 'up' | 'down'> = {};
    results.forEach((result, i) => (services[names[i]!] = result.status === 'fulfilled' ? 'up' : 'down'));
    const down = names.filter((name) => services[name] === 'down');
    ctx.status = down.length === 0 ? 200 : 503;
    ctx.body = down.length === 0 ? { status: 'ready', services } : { status: 'unavailable', message: `not reachable: ${down.join(', ')}`, services };
  });
  return router;
}
