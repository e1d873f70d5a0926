import { BODY_MIN_RATE as MIN_RATE } from '../read-body';

/**
 * The one error hierarchy of the HTTP surface. Each error has a status, a stable
 * `type`, and a message that is safe to show to the caller. The error middleware
 * renders it as the gateway envelope `{error: {message, type, code, request_id}}`
 * (or the provider-native envelope on /v1/messages). Anything that is not an
 * ApiError becomes a 500 whose message reveals nothing about internals.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'invalid_token'
  | 'permission_error'
  | 'not_found_error'
  | 'method_not_allowed'
  | 'conflict_error'
  | 'request_too_large'
  | 'unsupported_media_type'
  | 'insufficient_credits'
  | 'rate_limit_error'
  | 'content_policy_violation'
  | 'upstream_error'
  | 'overloaded_error'
  | 'service_unavailable'
  | 'api_error';

export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  /** Extra response headers (Retry-After, WWW-Authenticate, ...). */
  readonly headers: Record<string, string>;
  /** Optional field the message is about (first offending input). */
  readonly param?: string;

  constructor(status: number, type: ErrorType, message: string, options: { headers?: Record<string, string>; param?: string } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.type = type;
    this.headers = options.headers ?? {};
    this.param = options.param;
  }
}

export const badRequest = (message: string, param?: string) => new ApiError(400, 'invalid_request_error', message, { param });
export const notFound = (what = 'resource') => new ApiError(404, 'not_found_error', `${what} not found`);
export const conflict = (message: string) => new ApiError(409, 'conflict_error', message);
export const forbidden = (message: string) => new ApiError(403, 'permission_error', message);
export const payloadTooLarge = (limitBytes: number) =>
  new ApiError(413, 'request_too_large', `request body exceeds the limit of ${limitBytes} bytes`);
/** The minimum body rate (read-body.ts), with the gateway's 408. */
export const BODY_MIN_RATE = {
  ...MIN_RATE,
  tooSlow: () => new ApiError(408, 'invalid_request_error', `the request body arrived slower than ${MIN_RATE.bytesPerSecond} bytes a second; send it again`),
};
export const unsupportedMediaType = (accepted = 'application/json') =>
  new ApiError(415, 'unsupported_media_type', `Content-Type must be ${accepted}`);
/** A compressed request body: the gateway reads bodies as sent. */
export const unsupportedEncoding = (encoding: string) =>
  new ApiError(415, 'unsupported_media_type', `Content-Encoding '${encoding}' is not supported; send the body uncompressed`);
export const methodNotAllowed = (allowed: string[]) =>
  new ApiError(405, 'method_not_allowed', `method not allowed; allowed: ${allowed.join(', ')}`, {
    headers: { Allow: allowed.join(', ') },
  });
export const serviceUnavailable = (message: string, retryAfterSeconds = 1) =>
  new ApiError(503, 'service_unavailable', message, { headers: { 'Retry-After': String(retryAfterSeconds) } });
/** Credits exhausted: 402, deliberately distinct from 429 so clients do not retry it. */
export const creditsExhausted = () =>
  new ApiError(402, 'insufficient_credits', "the project's credit balance is exhausted; grant or top up credits to continue");
export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError(429, 'rate_limit_error', 'rate limit exceeded; retry after the delay in Retry-After', {
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
