import type Koa from 'koa';
import type { Logger } from '../logger';

/** What middleware leaves on `ctx.state` for the handlers after it. */
export interface AppState {
  requestId: string;
  log: Logger;
  /** `native` renders errors in the provider-native envelope (POST /v1/messages). */
  errorFormat?: 'gateway' | 'anthropic';
  /** The client closed the connection before the answer was sent (access log: status 499). */
  clientClosed?: boolean;
  /** Set by the auth middleware. */
  principal?: import('../auth/principal').Principal;
}

export type AppContext = Koa.ParameterizedContext<AppState> & { request: { body?: unknown } };
export type Middleware = Koa.Middleware<AppState, AppContext>;
