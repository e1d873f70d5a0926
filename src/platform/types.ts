import type Koa from 'koa';
import type { Logger } from '../logger';

export interface PlatformState {
  requestId: string;
  log: Logger;
  /** Set by Basic authentication. */
  user?: { id: string; username: string; accountIds: string[] };
}
export type PlatformContext = Koa.ParameterizedContext<PlatformState> & { request: { body?: unknown } };
export type PlatformMiddleware = Koa.Middleware<PlatformState, PlatformContext>;
