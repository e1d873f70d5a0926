/**
 * Platform API errors: `{message, documentation_url?, errors?: [{resource, field?, type?, code?, message?}]}`
 * (spec "Platform API errors"), with statuses 400, 401, 403, 404, 409, 413, 429, 500, 503.
 */
export interface PlatformErrorDetail {
  resource: string;
  field?: string;
  type?: 'invalid_value' | 'access_error' | 'value_unavailable' | 'missing_value';
  code?: string;
  message?: string;
}

/** The API's own description, served by the same server (no external docs site is assumed). */
export const PLATFORM_DOCS_URL = '/v1/openapi.json';

export class PlatformError extends Error {
  constructor(readonly status: number, message: string, readonly errors?: PlatformErrorDetail[], readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

export const invalidValue = (resource: string, field: string, message: string) =>
  new PlatformError(400, 'Bad Request', [{ resource, field, type: 'invalid_value', message }]);
export const platformNotFound = (resource: string) => new PlatformError(404, 'Not Found', [{ resource, type: 'value_unavailable', message: `${resource} not found` }]);
export const platformForbidden = (resource: string, message: string) => new PlatformError(403, 'Not Authorized', [{ resource, type: 'access_error', message }]);
export const platformConflict = (resource: string, field: string, message: string) =>
  new PlatformError(409, 'Conflict', [{ resource, field, type: 'value_unavailable', message }]);
