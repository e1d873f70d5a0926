import type { ProviderName } from './catalog';

/**
 * Upstream failures, typed by HTTP status and structured body (never by guessing at
 * message text, with the one documented exception in each adapter's
 * `isContextOverflow`). Retryability comes from the status: 408, 409, 429 and 5xx.
 */
export class ProviderError extends Error {
  readonly provider: ProviderName;
  readonly model: string;
  readonly retryable: boolean;

  constructor(message: string, options: { provider: ProviderName; model: string; retryable: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.provider = options.provider;
    this.model = options.model;
    this.retryable = options.retryable;
  }
}

export interface UpstreamResponseInfo {
  status: number;
  /** The provider's body, verbatim, for pass-through. */
  body: string;
  contentType: string;
  retryAfterMs?: number;
  upstreamRequestId?: string;
}

/** The provider answered with an error status. Pass-through keeps `status` and `body`. */
export class UpstreamHttpError extends ProviderError {
  readonly status: number;
  readonly body: string;
  readonly contentType: string;
  readonly retryAfterMs?: number;
  readonly upstreamRequestId?: string;

  constructor(message: string, info: UpstreamResponseInfo & { provider: ProviderName; model: string }) {
    super(message, { provider: info.provider, model: info.model, retryable: isRetryableStatus(info.status) });
    this.status = info.status;
    this.body = info.body;
    this.contentType = info.contentType;
    this.retryAfterMs = info.retryAfterMs;
    this.upstreamRequestId = info.upstreamRequestId;
  }
}

export class BadRequestError extends UpstreamHttpError {}
export class AuthenticationError extends UpstreamHttpError {}
export class PermissionDeniedError extends UpstreamHttpError {}
export class NotFoundError extends UpstreamHttpError {}
export class RateLimitError extends UpstreamHttpError {}
/** 5xx, including Anthropic's 529 overloaded. */
export class ServerError extends UpstreamHttpError {}
/** The prompt does not fit the model's context window: the agent runtime compacts and retries. */
export class ContextWindowExceededError extends UpstreamHttpError {}

/** No HTTP answer in time (the configured upstream timeout). */
export class UpstreamTimeoutError extends ProviderError {}
/** Connection refused/reset, DNS failure, or the stream broke before its end. */
export class UpstreamConnectionError extends ProviderError {}
/** The upstream answered 2xx with something we cannot read. */
export class InvalidUpstreamResponseError extends ProviderError {}

export const isRetryableStatus = (status: number): boolean => status === 408 || status === 409 || status === 429 || status >= 500;

/** `Retry-After` (seconds or HTTP date) or `retry-after-ms`, as milliseconds. */
export function parseRetryAfter(headers: { get(name: string): string | null }, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after');
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Picks the class for a status; `contextOverflow` comes from the provider's structured body. */
export function httpErrorFor(info: UpstreamResponseInfo & { provider: ProviderName; model: string }, contextOverflow: boolean): UpstreamHttpError {
  const message = `${info.provider} returned HTTP ${info.status}`;
  if (contextOverflow) return new ContextWindowExceededError(message, info);
  switch (info.status) {
    case 400:
    case 422:
      return new BadRequestError(message, info);
    case 401:
      return new AuthenticationError(message, info);
    case 403:
      return new PermissionDeniedError(message, info);
    case 404:
      return new NotFoundError(message, info);
    case 429:
      return new RateLimitError(message, info);
    default:
      return info.status >= 500 ? new ServerError(message, info) : new UpstreamHttpError(message, info);
  }
}

/** Reads the JSON error body if there is one; `undefined` otherwise. */
export function parseJsonBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/**
 * What a broken stream reports: our own typed errors as they are, the caller's abort as
 * is, anything else (a reset socket, undici's "terminated") as a connection error. No
 * `instanceof Error` check: errors from Node internals can come from another realm.
 */
export function streamFailure(error: unknown, provider: ProviderName, model: string): Error {
  if (error instanceof ProviderError) return error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'AbortError') return error as Error;
  return new UpstreamConnectionError(`the ${provider} stream broke`, { provider, model, retryable: true, cause: error });
}
