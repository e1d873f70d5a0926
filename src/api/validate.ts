import type { z } from 'zod';
import { badRequest } from './errors';

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
