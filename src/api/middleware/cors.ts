import type { Middleware } from '../types';

/** Response headers a browser script may read (the request id, concurrency and retry hints). */
const EXPOSED = ['X-Request-ID', 'request-id', 'ETag', 'Retry-After', 'Location', 'WWW-Authenticate'].join(', ');
/** On every answer (also those the server gives before the app sees a request). */
export const CORS_HEADERS = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED };
/** A `Access-Control-Request-Headers` value: a comma-separated list of header names. */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;

/**
 * Cross-origin access for browsers (a site's visitors with browser session tokens, SDKs run in
 * a page). Every credential here is a bearer header the page sends itself, never a cookie, so
 * any origin may call (`*`, no Allow-Credentials): a page learns nothing its own token does not
 * already let it read. A preflight (OPTIONS with Access-Control-Request-Method) of a known path
 * is answered 204 with that path's methods; of an unknown path it falls through to the 404.
 */
export function cors(methodsFor: (path: string) => string[]): Middleware {
  return async (ctx, next) => {
    ctx.set(CORS_HEADERS);
    const requested = ctx.get('access-control-request-method');
    if (ctx.method !== 'OPTIONS' || requested === '') return next();
    const methods = methodsFor(ctx.path);
    if (methods.length === 0) return next();
    ctx.status = 204;
    ctx.set('Access-Control-Allow-Methods', methods.join(', '));
    const headers = ctx.get('access-control-request-headers');
    if (HEADER_LIST.test(headers)) ctx.set('Access-Control-Allow-Headers', headers);
    ctx.set('Access-Control-Max-Age', '600');
  };
}
