import { z } from 'zod';
import { badRequest, notFound } from './errors';

/**
 * Parses untrusted input with a zod schema. The first issue becomes a 400 that
 * names the offending field, e.g. `messages.0.role: Invalid option`.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.map(String).join('.');
  const field = path || where;
  throw badRequest(`${field}: ${issue.message}`, path || undefined);
}

/** Ids the gateway issues (`agent_…`, `sesn_…`, `kbc_…`): a bounded set of URL-safe characters. */
export const ResourceIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);
/** Caller-chosen ids (knowledge-base documents): any text without control characters. */
export const ExternalIdSchema = z.string().min(1).max(512).regex(/^[^\p{Cc}]+$/u);

/**
 * A router param middleware: the path segment is parsed by `schema`; one that cannot be
 * an id answers 404 exactly like an absent resource.
 */
export function idParam(schema: z.ZodType<string>, what: string) {
  return (value: string, _ctx: unknown, next: () => Promise<unknown>) => {
    if (!schema.safeParse(value).success) throw notFound(what);
    return next();
  };
}
