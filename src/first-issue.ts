import type { z } from 'zod';

/**
 * The first issue of a failed parse, as every 400 of the gateway names it: its dotted path
 * (`messages.0.role`, empty at the top) and `path: message` (`fallback: message` when the
 * issue has no path, the bare message when there is no fallback either).
 */
export function firstIssue(error: z.ZodError, fallback?: string): { path: string; text: string } {
  const issue = error.issues[0]!;
  const path = issue.path.map(String).join('.');
  const where = path || fallback;
  return { path, text: where ? `${where}: ${issue.message}` : issue.message };
}
