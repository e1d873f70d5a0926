import { conflict } from '../errors';
import type { AppContext } from '../types';

/** The ETag of a versioned resource: its version number, quoted (a strong validator). */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * Optimistic concurrency: when the request carries `If-Match`, the stored version must be
 * one it lists (or `*`), else 409 (the spec's status for a conflicting agent update).
 * Without the header, updates serialize on the row lock and the last one wins.
 */
export function checkIfMatch(ctx: AppContext, version: number): void {
  const header = ctx.get('if-match').trim();
  if (header === '' || header === '*') return;
  const listed = header.split(',').map((tag) => tag.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1'));
  if (!listed.includes(String(version))) {
    throw conflict(`the agent was modified concurrently: its current version is ${version}, If-Match asked for ${header}`);
  }
}
