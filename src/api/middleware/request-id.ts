import { randomUUID } from 'node:crypto';
import type { Logger } from '../../logger';
import type { Middleware } from '../types';

// The spec: request_id is the load balancer's 32-character trace id, otherwise a UUID. An
// incoming id is kept only in that form; anything else is replaced, so no arbitrary text
// reaches the logs. Behind the load balancer, which sets the header on every request, the id
// is its trace id; a client talking to the api directly can send its own 32-hex id, which
// then only labels its own requests.
const ACCEPTABLE_ID = /^[0-9a-f]{32}$/i;

export function requestId(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = ACCEPTABLE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = logger.child({ request_id: id });
    ctx.set('X-Request-ID', id);
    // The same id under the name the Anthropic SDK reads (its `requestID`).
    ctx.set('request-id', id);
    await next();
  };
}
