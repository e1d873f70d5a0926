/** Postgres errors that are not bugs: how the API and the platform API classify them. */

/**
 * SQLSTATEs that only a caller's text can cause: Postgres text and jsonb cannot hold U+0000
 * (22021 invalid byte sequence, 22P05 untranslatable character). The statement wrote
 * nothing (and a surrounding transaction rolls back), so this is a plain bad input.
 */
const NUL_IN_TEXT_SQLSTATES = new Set(['22021', '22P05']);

export function nulInText(error: unknown): boolean {
  return NUL_IN_TEXT_SQLSTATES.has((error as { code?: unknown } | null)?.code as string);
}

/**
 * Postgres could not be reached, or dropped the connection (refused, shutting down, pool
 * connect timeout): a dependency outage the caller should retry with back-off, not a 500.
 */
// (57014: a statement cancelled by statement_timeout, QUERY_TIMEOUT_MS in db.ts: Postgres too slow or a lock held too long.)
const DATABASE_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '57014', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);
// (`Query read timeout`: pg's client-side timeout, QUERY_TIMEOUT_MS in db.ts: Postgres stopped answering.)
const DATABASE_UNAVAILABLE_MESSAGES =
  /^(timeout exceeded when trying to connect|timeout expired|Connection terminated unexpectedly|Connection terminated due to connection timeout|Query read timeout|Client was closed and is not queryable|Client has encountered a connection error and is not queryable)/;
/**
 * The statement never reached Postgres (no connection could be made or taken from the pool):
 * it wrote nothing, so sending it again cannot apply it twice. (A connection lost mid-statement
 * is not in this set: that statement may have committed.)
 */
// (EHOSTUNREACH and ENETUNREACH are left out: they can also end a connection mid-statement.)
const NOT_REACHED_CODES = new Set(['ECONNREFUSED', 'EAI_AGAIN', '57P03']);
// (`timeout expired`: a pg Client's own connect timeout, as the pool's is `timeout exceeded ...`.)
const NOT_REACHED_MESSAGES = /^(timeout exceeded when trying to connect|timeout expired|Connection terminated due to connection timeout)/;
export function databaseNotReached(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (typeof code === 'string' && NOT_REACHED_CODES.has(code)) || (typeof message === 'string' && NOT_REACHED_MESSAGES.test(message));
}

export function databaseUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (typeof code === 'string' && DATABASE_UNAVAILABLE_CODES.has(code)) || (typeof message === 'string' && DATABASE_UNAVAILABLE_MESSAGES.test(message));
}

/**
 * The statement failed because of the data it carried (SQLSTATE class 22, data exception, or
 * 23, integrity constraint): it wrote nothing, and another statement without that data may
 * succeed. Any other failure (a connection lost mid-statement above all) may have committed.
 */
export function dataFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}
