import { ApiError, badRequest, serviceUnavailable } from '../errors';
import type { AppContext, Middleware } from '../types';
import { databaseUnavailable, nulInText } from '../../store/db-errors';
import { nulField } from '../../json-text';
import { ANTHROPIC_ERROR_TYPES } from '../../providers/anthropic/error-types';

// Provider-native (Anthropic) error types by status, for POST /v1/messages: the provider's
// own table, within the types the spec lists for this endpoint (so not Anthropic's
// `billing_error` and `timeout_error`), plus the statuses only the gateway answers with.
const NATIVE_TYPES: Record<number, string> = {
  ...ANTHROPIC_ERROR_TYPES,
  402: 'invalid_request_error',
  405: 'invalid_request_error',
  409: 'invalid_request_error',
  415: 'invalid_request_error',
  503: 'overloaded_error',
  504: 'api_error',
};

/** The native error type for a status (POST /v1/messages, its error events included). */
export const nativeErrorType = (status: number): string => NATIVE_TYPES[status] ?? (status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error');


/**
 * What an unexpected error may put in a log line: its type, message and stack. Client
 * errors of our dependencies carry the request they made (an Elasticsearch error's
 * `meta` holds the document or query text; a pg error the statement's parameters), so
 * their other properties are left out.
 */
export function loggableError(error: unknown): { type: string; message: string; stack?: string; code?: string } {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { type: error.name, message: error.message, stack: error.stack, ...(typeof code === 'string' ? { code } : {}) };
}

/** `inputs`: the request's parsed body and query, to name the field an error is about. */
export function toApiError(error: unknown, inputs: unknown[] = []): ApiError {
  if (error instanceof ApiError) return error;
  if (databaseUnavailable(error)) return serviceUnavailable('a required dependency is unavailable; retry after a short delay', 1);
  if (nulInText(error)) {
    const field = nulField(inputs);
    return badRequest(`${field ? `${field}: ` : ''}text values must not contain the NUL character (U+0000)`, field);
  }
  // Koa / raw-body style errors carry `status` and `expose`.
  const e = error as { status?: number; expose?: boolean; message?: string; type?: string };
  if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) {
    return new ApiError(e.status, e.status === 404 ? 'not_found_error' : 'invalid_request_error', e.message ?? 'bad request');
  }
  return new ApiError(500, 'api_error', 'internal server error; it is safe to retry once');
}

/** The provider-native messages routes (served or not): their errors are in the native envelope. */
export const isMessagesPath = (path: string): boolean => path === '/v1/messages' || path.startsWith('/v1/messages/');

export function renderError(ctx: AppContext, error: ApiError): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  const request_id = ctx.state.requestId;
  // The route sets the native format; errors before it (a wrong method) go by the path, as do
  // the provider's other messages routes the gateway does not serve (count_tokens, batches):
  // the Anthropic SDK reads the native envelope there.
  if (ctx.state.errorFormat === 'anthropic' || isMessagesPath(ctx.path)) {
    const type = error.type === 'content_policy_violation' ? error.type : nativeErrorType(error.status);
    ctx.body = { type: 'error', error: { type, message: error.message, request_id } };
  } else {
    ctx.body = { error: { message: error.message, type: error.type, code: error.status, request_id } };
  }
}

export function errorHandler(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      // The client hung up first (its call was aborted, or its socket is gone): nobody is left
      // to answer, and a client going away is not the gateway's error.
      // (Only the response says so: the request stream is destroyed once its body is read.)
      if (!ctx.res.writableFinished && ctx.res.destroyed) {
        ctx.state.clientClosed = true;
        if (isHangUp(thrown)) ctx.state.log.info({ cause: (thrown as Error).message }, 'client closed the connection before the answer');
        else ctx.state.log.error({ err: loggableError(thrown) }, 'unhandled error (the client had closed the connection)');
        return;
      }
      const error = toApiError(thrown, [ctx.request.body, ctx.query]);
      if (error.status >= 500 && !(thrown instanceof ApiError)) {
        ctx.state.log.error({ err: loggableError(thrown) }, 'unhandled error');
      }
      if (ctx.headerSent || !ctx.writable) return; // a stream already began; its own protocol reported the failure
      renderError(ctx, error);
    }
  };
}

/** The errors a request's own work raises because its client went away (aborted reads and calls). */
function isHangUp(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string; type?: string }).code ?? (error as { type?: string }).type;
  return (
    error.message === 'client disconnected' ||
    error.name === 'AbortError' ||
    error.message === 'aborted' ||
    ['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'request.aborted'].includes(code ?? '')
  );
}
