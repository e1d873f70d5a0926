/**
 * Text the runtime writes to the event log that no client sent (model output, tool results,
 * summaries) may hold what Postgres text and jsonb cannot store: U+0000, or an unpaired UTF-16
 * surrogate (a model's JSON can escape either). The run would fail on its own output, so such
 * values are stored with U+FFFD in their place. (Client input holding either is refused with
 * a 400 instead: the client can fix it.)
 */
export function storable<T>(value: T): T {
  return clean(value) as T;
}

const NUL = /\u0000/g;

function clean(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed().replace(NUL, '\ufffd');
  if (Array.isArray(value)) return value.map(clean);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [clean(key) as string, clean(entry)]));
  }
  return value;
}
