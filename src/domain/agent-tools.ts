/**
 * Environment rules over an agent's tool entries. The entry schemas live in
 * agent-tool-entries.ts (validated by the agents API); how entries become the model's
 * tool list during a run lives in run-tools.ts.
 */
import type { ToolEntry } from './agent-tool-entries';

export type { ToolEntry } from './agent-tool-entries';

/** Built-in tools served only in development environments (ENVIRONMENT=development). */
export const DEVELOPMENT_ONLY_TOOL_TYPES = ['echo', 'random_number'] as const;

/**
 * The entries this environment cannot serve: `echo` and `random_number` outside
 * development. A run of an agent declaring any fails with `toolset_incomplete`.
 */
export function unservedTools(tools: readonly ToolEntry[], isDevelopment: boolean): ToolEntry[] {
  if (isDevelopment) return [];
  return tools.filter((tool) => (DEVELOPMENT_ONLY_TOOL_TYPES as readonly string[]).includes(tool.type ?? 'custom'));
}
