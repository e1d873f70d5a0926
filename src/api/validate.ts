import { z } from 'zod';
import { firstIssue } from '../first-issue';
import { badRequest, notFound } from './errors';
import type { Middleware } from './types';

/**
 * Parses untrusted input with a zod schema. The first issue becomes a 400 that
 * names the offending field, e.g. `messages.0.role: Invalid option`.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const { path, text } = firstIssue(result.error, where);
  throw badRequest(text, path || undefined);
}

/** Ids the gateway issues (`agent_…`, `sesn_…`, `kbc_…`): a bounded set of URL-safe characters. */
export const ResourceIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);

/**
 * Path ids, checked after the route's rate limit and authentication (a router.param check
 * would run before them): a segment that cannot be an id answers 404 exactly like an absent
 * resource. Params the matched route does not have are skipped.
 */
export function pathIds(ids: Record<string, { schema: z.ZodType<string>; what: string }>): Middleware {
  return (ctx, next) => {
    const params = (ctx as unknown as { params?: Record<string, string | undefined> }).params ?? {};
    for (const [param, { schema, what }] of Object.entries(ids)) {
      const value = params[param];
      if (value !== undefined && !schema.safeParse(value).success) throw notFound(what);
    }
    return next();
  };
}
