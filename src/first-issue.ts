import type { z } from 'zod';

/**
 * The first issue of a failed parse, as every 400 of the gateway names it: its dotted path
 * (`messages.0.role`, empty at the top) and `path: message` (`fallback: message` when the
 * issue has no path, the bare message when there is no fallback either).
 */
export function firstIssue(error: z.ZodError, fallback?: string): { path: string; text: string } {
  const issue = error.issues[0]!;
  const path = shortened(issue.path.map(String).join('.'));
  const where = path || fallback;
  const message = issue.code === 'unrecognized_keys' && issue.keys.length > MAX_NAMED_KEYS ? unrecognized(issue.keys) : shortened(issue.message);
  return { path, text: where ? `${where}: ${message}` : message };
}

// An error answers in a few hundred bytes whatever the input: a body of 60,000 unknown keys
// would otherwise be answered with a message naming every one (larger than the request).
const MAX_NAMED_KEYS = 10;
const MAX_TEXT = 500;
// (Cut where no surrogate pair is split: the message may be stored, and jsonb refuses half a pair.)
const shortened = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT).replace(/[\ud800-\udbff]$/, '')}…` : text);
const unrecognized = (keys: readonly PropertyKey[]) =>
  shortened(`Unrecognized keys: ${keys.slice(0, MAX_NAMED_KEYS).map((key) => JSON.stringify(String(key))).join(', ')} and ${keys.length - MAX_NAMED_KEYS} more`);
