/**
 * Opaque keyset cursors: base64url JSON of the last row's sort key, tagged with the list
 * it belongs to so a cursor from one listing cannot be replayed against another.
 * Clients must treat them as opaque; the shape may change.
 */
export interface Cursor {
  /** Which list (and order) the cursor belongs to. */
  list: string;
  /** The last row's exact created_at, as Postgres text (microsecond precision). */
  at: string;
  /** Tie-breaker: the row id (sessions, agents) or per-session sequence (events). */
  key: string;
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.list, cursor.at, cursor.key]), 'utf8').toString('base64url');
}

/** The decoded cursor, or undefined when it is malformed or belongs to another list. */
export function decodeCursor(text: string, list: string): Cursor | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(value) || value.length !== 3 || !value.every((v) => typeof v === 'string')) return undefined;
    const [cursorList, at, key] = value as [string, string, string];
    if (cursorList !== list || !isCursorTime(at)) return undefined;
    return { list: cursorList, at, key };
  } catch {
    return undefined;
  }
}

/**
 * Exactly the text CURSOR_AT writes (UTC, microseconds) and a real calendar time: the value
 * goes to Postgres as a timestamptz, which refuses much that Date.parse accepts ('0',
 * Feb 30, the year 0000, which JavaScript has and Postgres does not), so anything else is a
 * tampered cursor (400), not a failed query (500).
 */
const CURSOR_TIME = /^((?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})\d{3}Z$/;
function isCursorTime(at: string): boolean {
  const millis = CURSOR_TIME.exec(at)?.[1];
  if (!millis) return false;
  const parsed = new Date(`${millis}Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString() === `${millis}Z`;
}
