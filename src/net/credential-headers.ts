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

/** Middleware refusing a request that repeats a credential header, with the server's own error. */
export function refuseRepeatedCredentials(toError: (header: string) => Error) {
  return async (ctx: { req: { rawHeaders: string[] } }, next: () => Promise<unknown>): Promise<void> => {
    const repeated = repeatedCredentialHeader(ctx.req.rawHeaders);
    if (repeated) throw toError(repeated);
    await next();
  };
}
