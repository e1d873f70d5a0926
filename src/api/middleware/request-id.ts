import { randomUUID } from 'node:crypto';
import type { Logger } from '../../logger';
import type { Middleware } from '../types';

// An incoming id is kept only when it looks like one (trace ids from the load balancer
// are 32 hex chars); anything else is replaced so log lines cannot be forged.
const ACCEPTABLE_ID = /^[A-Za-z0-9-]{8,64}$/;

export function requestId(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = ACCEPTABLE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = logger.child({ request_id: id });
    ctx.set('X-Request-ID', id);
    await next();
  };
}
