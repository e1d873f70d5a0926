/**
 * Text the runtime writes to the event log that no client sent (model output, tool results,
 * summaries) may hold U+0000, which Postgres text and jsonb cannot store: the run would fail
 * on its own output. Such values are stored with U+FFFD in its place. (Client input with a
 * NUL is refused with a 400 instead: the client can fix it.)
 */
export function withoutNul<T>(value: T): T {
  return replaceNul(value) as T;
}

const NUL = /\u0000/g;

function replaceNul(value: unknown): unknown {
  if (typeof value === 'string') return value.includes('\u0000') ? value.replace(NUL, '\ufffd') : value;
  if (Array.isArray(value)) return value.map(replaceNul);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [replaceNul(key) as string, replaceNul(entry)]));
  }
  return value;
}
