/**
 * Anthropic's error types by HTTP status (the provider-native error envelope): read to know the
 * status of an error event mid-stream. (What the gateway itself answers on /v1/messages keeps to
 * the spec's list of types: api/middleware/error-handler.ts.)
 */
export const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const STATUS_BY_TYPE = new Map(Object.entries(ANTHROPIC_ERROR_TYPES).map(([status, type]) => [type, Number(status)]));

/** The status an error type stands for (an error event mid-stream carries only its type). */
export function anthropicErrorStatus(type: string | null | undefined): number {
  return (type && STATUS_BY_TYPE.get(type)) || 500;
}
