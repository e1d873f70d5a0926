import type { Middleware } from '../types';

/**
 * One JSON line per request: method, path (never the query string), status, duration. A
 * request whose client hung up first is logged with 499, the status proxies use for it.
 */
export function accessLog(): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const duration_ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.log.info(
        { method: ctx.method, path: ctx.path, status: ctx.state.clientClosed || (ctx.res.destroyed && !ctx.res.writableFinished) ? 499 : ctx.status, duration_ms: Math.round(duration_ms * 100) / 100 },
        'request',
      );
    }
  };
}
