/**
 * What the runtime derives from an agent's tool entries: the tools offered to the model,
 * the role of a tool the model names, strict input validation for deferred tools, the
 * deferred-tool search and the model-readable error envelope. Pure; no I/O.
 * The entry schemas themselves live in agent-tool-entries.ts (validated by the agents API).
 *
 * NOTE: reconstructed by the agents/sessions API work after an accidental overwrite of the
 * lead's original file; the exports keep the signatures activities/ uses.
 */
import Ajv, { type AnySchema, type ErrorObject } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import type { ToolEntry } from './agent-tool-entries';

export type { ToolEntry } from './agent-tool-entries';
type CustomEntry = Extract<ToolEntry, { type?: 'custom' }>;
type KnowledgeBaseEntry = Extract<ToolEntry, { type: 'knowledge_base' }>;

/** Built-in tools served only in development environments (ENVIRONMENT=development). */
export const DEVELOPMENT_ONLY_TOOL_TYPES = ['echo', 'random_number'] as const;
/** The gateway tool that searches deferred tools by name, label and description. */
export const SEARCH_TOOLS_NAME = 'search_tools';

/**
 * The entries this environment cannot serve: `echo` and `random_number` outside
 * development. A run of an agent declaring any fails with `toolset_incomplete`.
 */
export function unservedTools(tools: readonly ToolEntry[], isDevelopment: boolean): ToolEntry[] {
  if (isDevelopment) return [];
  return tools.filter((tool) => (DEVELOPMENT_ONLY_TOOL_TYPES as readonly string[]).includes(tool.type ?? 'custom'));
}

// Runtime tool names of a knowledge_base entry, derived from its collection id.
const safeName = (value: string) => value.replace(/[^a-zA-Z0-9_-]/g, '_');
export const kbSearchToolName = (collectionId: string) => `search_${safeName(collectionId)}`.slice(0, 64);
export const kbFetchToolName = (collectionId: string) => `fetch_${safeName(collectionId)}`.slice(0, 64);

const isCustom = (tool: ToolEntry): tool is CustomEntry => tool.type === undefined || tool.type === 'custom';
const EMPTY_OBJECT_SCHEMA = { type: 'object', properties: {} };

export interface ModelTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** The tools offered to the model this turn: non-deferred and loaded deferred tools, built-ins, KB tools, deferred search. */
export function modelTools(tools: readonly ToolEntry[], loaded: ReadonlySet<string>, options: { kbEnabled: boolean }): ModelTool[] {
  const out: ModelTool[] = [];
  let hasDeferred = false;
  for (const tool of tools) {
    if (isCustom(tool)) {
      if (tool.defer_loading && !loaded.has(tool.name)) {
        hasDeferred = true;
        continue;
      }
      out.push({ name: tool.name, ...(tool.description ? { description: tool.description } : {}), input_schema: tool.input_schema ?? EMPTY_OBJECT_SCHEMA });
    } else if (tool.type === 'echo') {
      out.push({
        name: tool.name,
        description: tool.description ?? 'Returns its input message unchanged.',
        input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
      });
    } else if (tool.type === 'random_number') {
      out.push({
        name: tool.name,
        description: tool.description ?? 'Returns a random integer between min and max, inclusive.',
        input_schema: { type: 'object', properties: { min: { type: 'integer' }, max: { type: 'integer' } }, required: ['min', 'max'] },
      });
    } else if (tool.type === 'knowledge_base' && options.kbEnabled) {
      out.push({
        name: kbSearchToolName(tool.collection_id),
        description: tool.description ?? `Searches the knowledge base ${tool.collection_id}.`,
        input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      });
      out.push({
        name: kbFetchToolName(tool.collection_id),
        description: `Fetches one document of the knowledge base ${tool.collection_id} by id.`,
        input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      });
    }
  }
  if (hasDeferred) {
    out.push({
      name: SEARCH_TOOLS_NAME,
      description: 'Searches the tools that are available but not loaded yet, by name, label and description.',
      input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    });
  }
  return out;
}

export type ToolRole =
  | { kind: 'client'; entry: CustomEntry }
  | { kind: 'deferred'; entry: CustomEntry }
  | { kind: 'echo' }
  | { kind: 'random_number' }
  | { kind: 'search_tools' }
  | { kind: 'kb_search' | 'kb_fetch'; entry: KnowledgeBaseEntry }
  | { kind: 'unknown' };

/** Who answers a call to `name`: the client (a custom tool) or the gateway. */
export function roleOf(tools: readonly ToolEntry[], name: string): ToolRole {
  for (const tool of tools) {
    if (isCustom(tool)) {
      if (tool.name === name) return { kind: tool.defer_loading ? 'deferred' : 'client', entry: tool };
    } else if (tool.type === 'echo' || tool.type === 'random_number') {
      if (tool.name === name) return { kind: tool.type };
    } else if (tool.type === 'knowledge_base') {
      if (kbSearchToolName(tool.collection_id) === name) return { kind: 'kb_search', entry: tool };
      if (kbFetchToolName(tool.collection_id) === name) return { kind: 'kb_fetch', entry: tool };
    }
  }
  if (name === SEARCH_TOOLS_NAME && tools.some((tool) => isCustom(tool) && tool.defer_loading)) return { kind: 'search_tools' };
  return { kind: 'unknown' };
}

/** Deferred tools matching the query (case-insensitive, any word) by name, label or description. */
export function searchDeferredTools(tools: readonly ToolEntry[], query: string): Array<{ name: string; label?: string; description?: string }> {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return tools
    .filter((tool): tool is CustomEntry => isCustom(tool) && tool.defer_loading === true)
    .filter((tool) => {
      const haystack = `${tool.name} ${tool.label ?? ''} ${tool.description ?? ''}`.toLowerCase();
      return words.length === 0 || words.some((word) => haystack.includes(word));
    })
    .map((tool) => ({ name: tool.name, ...(tool.label ? { label: tool.label } : {}), ...(tool.description ? { description: tool.description } : {}) }));
}

const draft07 = new Ajv({ strict: false, allErrors: false });
const draft2020 = new Ajv2020({ strict: false, allErrors: false });

/** Strict validation of a loaded deferred tool's input: undefined when valid, else the first problem. */
export function validateToolInput(schema: Record<string, unknown>, input: unknown): { message: string; field?: string } | undefined {
  const ajv = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft07;
  let validate;
  try {
    validate = ajv.compile(schema as AnySchema);
  } catch (error) {
    return { message: `the tool's input schema is invalid: ${(error as Error).message}` };
  }
  if (validate(input)) return undefined;
  const first = validate.errors?.[0] as ErrorObject | undefined;
  if (!first) return { message: 'invalid input' };
  const missing = (first.params as { missingProperty?: string }).missingProperty;
  const field = missing ?? (first.instancePath.split('/').filter(Boolean)[0] || undefined);
  return { message: `${first.instancePath || 'input'} ${first.message ?? 'is invalid'}`.trim(), ...(field ? { field } : {}) };
}

/** The model-readable error envelope of a failed tool result (spec: Events, field rules). */
export function toolErrorEnvelope(code: string, message: string, options: { field?: string; retryable: boolean }): string {
  return JSON.stringify({ error: { code, message, ...(options.field ? { field: options.field } : {}), retryable: options.retryable } });
}
