import { errors, type estypes } from '@elastic/elasticsearch';

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

/**
 * Connection failures, timeouts, 429/5xx answers and index blocks (an index being migrated, or
 * a full disk) are transient; anything else is a bug.
 */
export function isTransientSearchError(error: unknown): boolean {
  if (error instanceof errors.ConnectionError || error instanceof errors.TimeoutError || error instanceof errors.NoLivingConnectionsError) return true;
  if (error instanceof errors.ResponseError) {
    const type = (error.body as { error?: { type?: string } } | undefined)?.error?.type;
    return error.statusCode === 429 || (error.statusCode ?? 0) >= 500 || type === 'cluster_block_exception';
  }
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

/**
 * One answer of an msearch: its hits, or its failure thrown the way a plain search call
 * would throw it (a ResponseError carrying Elasticsearch's structured error body, transient
 * ones as SearchUnavailableError), so every caller maps both paths alike.
 */
export function msearchResult<T>(item: estypes.MsearchResponseItem<T>): estypes.MsearchMultiSearchItem<T> {
  if (!('error' in item)) return item;
  const failure = new errors.ResponseError({
    body: { error: item.error, status: item.status },
    statusCode: item.status,
    headers: {},
    warnings: null,
    meta: { context: null, name: 'msearch', request: { params: { method: 'POST', path: '/_msearch' }, options: {}, id: 0 }, connection: null, attempts: 0, aborted: false },
  });
  if (isTransientSearchError(failure)) throw new SearchUnavailableError('the knowledge base is unavailable; retry after a short delay', { cause: failure });
  throw failure;
}
