/**
 * A credential header sent more than once, or undefined. RFC 9110 makes Authorization a
 * single-valued field; Node keeps only the first of several, while a proxy in front may pass
 * on the last: two components would then authenticate different credentials. Refused instead.
 */
export function repeatedCredentialHeader(rawHeaders: string[]): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name !== 'authorization' && name !== 'x-api-key') continue;
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}

/**
 * Middleware refusing a request that repeats a credential header, with the error `toError`
 * builds for its path (undefined: the path's own routes make the check, in their shape).
 */
export function refuseRepeatedCredentials(toError: (header: string, path: string) => Error | undefined) {
  return async (ctx: { req: { rawHeaders: string[] }; path: string }, next: () => Promise<unknown>): Promise<void> => {
    const repeated = repeatedCredentialHeader(ctx.req.rawHeaders);
    const error = repeated ? toError(repeated, ctx.path) : undefined;
    if (error) throw error;
    await next();
  };
}

export const repeatedCredentialMessage = (header: string) => `the ${header} header was sent more than once; send one credential`;
