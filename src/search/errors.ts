import { errors } from '@elastic/elasticsearch';

/**
 * Elasticsearch (or the embedder) cannot serve the request right now. Callers map it to
 * 503 with Retry-After (HTTP) or a retryable activity failure (agent runs).
 */
export class SearchUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SearchUnavailableError';
  }
}

/** Connection failures, timeouts and 429/5xx answers are transient; anything else is a bug. */
export function isTransientSearchError(error: unknown): boolean {
  if (error instanceof errors.ConnectionError || error instanceof errors.TimeoutError || error instanceof errors.NoLivingConnectionsError) return true;
  if (error instanceof errors.ResponseError) return error.statusCode === 429 || (error.statusCode ?? 0) >= 500;
  return false;
}

/** Runs an Elasticsearch call, turning transient failures into SearchUnavailableError. */
export async function callSearch<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isTransientSearchError(error)) throw new SearchUnavailableError('the knowledge base is unavailable; retry after a short delay', { cause: error });
    throw error;
  }
}
