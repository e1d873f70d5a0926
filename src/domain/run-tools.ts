/**
 * How an agent's tool entries become the model's tool list during a run, and who
 * answers each call. Pure: used by activities and unit-tested alone.
 *
 *   custom          client-executed; deferred ones stay out of the list until loaded
 *   knowledge_base  expands to `<collection_id>_search` and `<collection_id>_fetch`
 *   echo            returns its `message` input unchanged (development only)
 *   random_number   an integer in [min, max] (development only)
 * With any deferred tool, the gateway adds `search_tools` over them.
 */
import type { ValidateFunction } from 'ajv';
import { compileToolInputSchema } from './json-schema';
import { createContext, Script } from 'node:vm';

export interface RunToolEntry {
  type?: string;
  name?: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  label?: string;
  defer_loading?: boolean;
  collection_id?: string;
  filters?: Record<string, unknown> | null;
}

export interface ModelTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export const SEARCH_TOOLS_NAME = 'search_tools';

export type ToolRole =
  | { kind: 'client'; entry: RunToolEntry }
  | { kind: 'deferred'; entry: RunToolEntry }
  | { kind: 'echo' }
  | { kind: 'random_number' }
  | { kind: 'search_tools' }
  | { kind: 'kb_search'; entry: RunToolEntry }
  | { kind: 'kb_fetch'; entry: RunToolEntry }
  | { kind: 'unknown' };

const kindOf = (entry: RunToolEntry) => entry.type ?? 'custom';

/** Which role a tool name the model called plays for this agent. */
export function roleOf(tools: RunToolEntry[], name: string): ToolRole {
  for (const entry of tools) {
    const kind = kindOf(entry);
    if (kind === 'custom' && entry.name === name) return entry.defer_loading ? { kind: 'deferred', entry } : { kind: 'client', entry };
    if (kind === 'echo' && entry.name === name) return { kind: 'echo' };
    if (kind === 'random_number' && entry.name === name) return { kind: 'random_number' };
    if (kind === 'knowledge_base' && name === kbToolName(entry, 'search')) return { kind: 'kb_search', entry };
    if (kind === 'knowledge_base' && name === kbToolName(entry, 'fetch')) return { kind: 'kb_fetch', entry };
  }
  if (name === SEARCH_TOOLS_NAME && tools.some((entry) => entry.defer_loading)) return { kind: 'search_tools' };
  // Conversations from before the tools were named from the collection id called them by the
  // entry's name; a run that replays such a conversation still answers those calls, unless
  // another tool of the agent has that exact name (checked above, so it wins).
  for (const entry of tools) {
    if (kindOf(entry) !== 'knowledge_base') continue;
    if (name === `${entry.name}_search`) return { kind: 'kb_search', entry };
    if (name === `${entry.name}_fetch`) return { kind: 'kb_fetch', entry };
  }
  return { kind: 'unknown' };
}

/** A knowledge_base entry's tools are named from its collection id (ids are `[A-Za-z0-9_]`, tool-name safe). */
export const kbToolName = (entry: Pick<RunToolEntry, 'collection_id'>, tool: 'search' | 'fetch') => `${entry.collection_id}_${tool}`;

const objectSchema = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required });

/** The model's tool list: non-deferred tools, deferred ones once loaded, and `search_tools` when any are deferred. */
export function modelTools(tools: RunToolEntry[], loaded: Set<string>, options: { kbEnabled: boolean }): ModelTool[] {
  const out: ModelTool[] = [];
  for (const entry of tools) {
    const kind = kindOf(entry);
    if (!entry.name) continue;
    if (kind === 'custom' && (!entry.defer_loading || loaded.has(entry.name))) {
      out.push({ name: entry.name, description: entry.description ?? '', input_schema: entry.input_schema ?? { type: 'object' } });
    } else if (kind === 'echo') {
      out.push({ name: entry.name, description: entry.description ?? 'Returns the given message unchanged.', input_schema: objectSchema({ message: { type: 'string' } }, ['message']) });
    } else if (kind === 'random_number') {
      out.push({
        name: entry.name,
        description: entry.description ?? 'Returns a random integer between min and max, inclusive.',
        input_schema: objectSchema({ min: { type: 'integer' }, max: { type: 'integer' } }, ['min', 'max']),
      });
    } else if (kind === 'knowledge_base' && options.kbEnabled) {
      const about = entry.description ? ` (${entry.description})` : '';
      out.push({
        name: kbToolName(entry, 'search'),
        description: `Searches the knowledge base ${entry.name}${about}; returns documents with ids, titles, URIs and snippets. Filters narrow the search (they never widen what this knowledge base allows).`,
        input_schema: objectSchema({ query: { type: 'string' }, filters: KB_SEARCH_FILTERS, top_n: { type: 'integer', minimum: 1, maximum: 50 } }, ['query']),
      });
      out.push({ name: kbToolName(entry, 'fetch'), description: `Fetches one document of the knowledge base ${entry.name} by id.`, input_schema: objectSchema({ id: { type: 'string' } }, ['id']) });
    }
  }
  if (tools.some((entry) => kindOf(entry) === 'custom' && entry.defer_loading)) {
    out.push({
      name: SEARCH_TOOLS_NAME,
      description: 'Searches tools that are available but not yet loaded, by name, label and description. Call a tool by its name to load it.',
      input_schema: objectSchema({ query: { type: 'string' } }, ['query']),
    });
  }
  return out;
}

/** The filters the knowledge-base search tool takes (those of POST /v1/kb/collections/{id}/search). */
const stringList = { type: 'array', items: { type: 'string' } };
const dateRange = { type: 'object', properties: { gte: { type: 'string', format: 'date-time' }, lte: { type: 'string', format: 'date-time' } } };
const KB_SEARCH_FILTERS = {
  type: 'object',
  properties: {
    type: stringList,
    uri: stringList,
    language: { ...stringList, description: 'ISO 639-1 codes' },
    metadata: { type: 'object', additionalProperties: stringList, description: 'metadata field to accepted values' },
    created_at: dateRange,
    modified_at: dateRange,
  },
};

/** Deferred tools matching a query (every word occurs in the name, label or description). */
export function searchDeferredTools(tools: RunToolEntry[], query: string): Array<{ name: string; label?: string; description: string }> {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return tools
    .filter((entry) => kindOf(entry) === 'custom' && entry.defer_loading && entry.name)
    .filter((entry) => {
      const text = `${entry.name} ${entry.label ?? ''} ${entry.description ?? ''}`.toLowerCase();
      return words.every((word) => text.includes(word));
    })
    .map((entry) => ({ name: entry.name!, ...(entry.label ? { label: entry.label } : {}), description: entry.description ?? '' }));
}

// Compiled validators by schema text: agents are read afresh for every call, so object
// identity would never hit. Bounded, oldest evicted first.
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 500;

/**
 * The validator of a tool's input schema: strict, every keyword applies (draft-07, or 2020-12
 * when declared). Throws when the schema cannot be compiled; a run checks every deferred
 * tool's schema this way before its first turn (`invalid_tool_schema`).
 */
export function toolInputValidator(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = compileToolInputSchema(schema);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, validate);
  }
  return validate;
}

/**
 * A tool's schema is a tenant's, and its `pattern`s run against what a model wrote, in the worker
 * every tenant's runs share: a pattern that backtracks catastrophically (`^(a|a)*$` on thirty
 * a's and a mismatch) would hold it for minutes. Validation runs under a vm timeout, whose
 * watchdog interrupts even a regular expression mid-match.
 */
const VALIDATION_TIMEOUT_MS = 1000;
const watched = createContext({ validate: (_input: unknown) => true, input: undefined as unknown });
const validation = new Script('validate(input)');
// (Weakly held: a validator the compile cache drops takes its mark with it.)
const slowSchemas = new WeakSet<ValidateFunction>();
function withinTime(validate: ValidateFunction, input: unknown): boolean {
  watched.validate = validate;
  watched.input = input;
  try {
    return validation.runInContext(watched, { timeout: VALIDATION_TIMEOUT_MS }) === true;
  } finally {
    watched.validate = () => true;
    watched.input = undefined;
  }
}

/**
 * Checks a tool input against the tool's input schema. Returns the first problem, with
 * the offending field as a dotted path (`address.city`, `items[2]`), or undefined. Never
 * throws: a schema that cannot be compiled is reported as the problem (the run's start
 * refuses such a toolset, so this is a backstop that keeps a recorded turn billable).
 */
export function validateToolInput(schema: Record<string, unknown>, input: unknown): { field?: string; message: string } | undefined {
  let validate: ValidateFunction;
  try {
    validate = toolInputValidator(schema);
  } catch (error) {
    return { message: `the tool's input schema cannot be used: ${(error as Error).message}` };
  }
  const tooSlow = { message: `the input could not be checked against the tool's input schema within ${VALIDATION_TIMEOUT_MS} ms (a pattern of the schema takes too long on it)` };
  // A schema that once took too long is not given the time again (a turn may call it many times).
  if (slowSchemas.has(validate)) return tooSlow;
  let valid: boolean;
  try {
    valid = withinTime(validate, input);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw error;
    slowSchemas.add(validate);
    return tooSlow;
  }
  if (valid) return undefined;
  const error = validate.errors![0]!;
  const segments = error.instancePath.split('/').slice(1).map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = error.keyword === 'required' ? String((error.params as { missingProperty: string }).missingProperty) : undefined;
  const extra = error.keyword === 'additionalProperties' ? String((error.params as { additionalProperty: string }).additionalProperty) : undefined;
  if (missing ?? extra) segments.push((missing ?? extra)!);
  const field = segments.reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment), '');
  const message = missing ? `missing required field ${field}` : extra ? `unexpected field ${field}` : `${field || 'input'} ${error.message}`;
  return { ...(field ? { field } : {}), message };
}

/** The JSON error envelope of a failed tool result (model-readable). */
export function toolErrorEnvelope(code: string, message: string, options: { field?: string; retryable?: boolean } = {}): string {
  return JSON.stringify({ error: { code, message, ...(options.field ? { field: options.field } : {}), retryable: options.retryable ?? false } });
}
