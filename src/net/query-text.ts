// Fatal, as request bodies are read (json-text.ts): Node's query parser turns bytes that are not
// UTF-8 into U+FFFD, so `k%FF` and `k%FE` would both name the metadata key `k\uFFFD`.
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Percent-escapes as the bytes they stand for (a `%` not followed by two hex digits stays). */
const percentDecoded = (text: string): Buffer =>
  Buffer.from(text.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');

const isUtf8 = (text: string): boolean => {
  try {
    UTF8.decode(percentDecoded(text));
    return true;
  } catch {
    return false;
  }
};

/**
 * The first query parameter (by its name) whose name or value is not UTF-8 once
 * percent-decoded, or undefined.
 */
export function nonUtf8QueryParameter(query: string): string | undefined {
  if (!query.includes('%')) return undefined;
  for (const pair of query.split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    if (!isUtf8(name) || !isUtf8(value)) return percentDecoded(name).toString('utf8');
  }
  return undefined;
}

export const nonUtf8QueryMessage = (parameter: string) => `query parameter ${JSON.stringify(parameter)} is not valid UTF-8 once percent-decoded`;

/** Middleware refusing a query string that is not UTF-8, with the error `toError` builds. */
export function refuseNonUtf8Query(toError: (parameter: string, path: string) => Error | undefined) {
  return async (ctx: { querystring: string; path: string }, next: () => Promise<unknown>): Promise<void> => {
    const parameter = nonUtf8QueryParameter(ctx.querystring);
    const error = parameter !== undefined ? toError(parameter, ctx.path) : undefined;
    if (error) throw error;
    await next();
  };
}
