/**
 * How an agent's tool entries become the model's tool list during a run, and who
 * answers each call. Pure: used by activities and unit-tested alone.
 *
 *   custom          client-executed; deferred ones stay out of the list until loaded
 *   knowledge_base  expands to `<name>_search` and `<name>_fetch`
 *   echo            returns its `message` input unchanged (development only)
 *   random_number   an integer in [min, max] (development only)
 * With any deferred tool, the gateway adds `search_tools` over them.
 */
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
    if (kind === 'knowledge_base' && `${entry.name}_search` === name) return { kind: 'kb_search', entry };
    if (kind === 'knowledge_base' && `${entry.name}_fetch` === name) return { kind: 'kb_fetch', entry };
  }
  if (name === SEARCH_TOOLS_NAME && tools.some((entry) => entry.defer_loading)) return { kind: 'search_tools' };
  return { kind: 'unknown' };
}

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
      out.push({ name: `${entry.name}_search`, description: 'Searches the knowledge base; returns documents with ids, titles, URIs and snippets.', input_schema: objectSchema({ query: { type: 'string' } }, ['query']) });
      out.push({ name: `${entry.name}_fetch`, description: 'Fetches one knowledge-base document by id.', input_schema: objectSchema({ id: { type: 'string' } }, ['id']) });
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

const TYPE_CHECKS: Record<string, (v: unknown) => boolean> = {
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  array: Array.isArray,
  string: (v) => typeof v === 'string',
  integer: Number.isInteger,
  number: (v) => typeof v === 'number',
  boolean: (v) => typeof v === 'boolean',
  null: (v) => v === null,
};

/**
 * Strict check of a tool input against the common subset of JSON Schema (type, enum,
 * required, properties, additionalProperties: false, items). Returns the first problem,
 * naming the offending field.
 */
export function validateToolInput(schema: Record<string, unknown>, input: unknown, path = ''): { field?: string; message: string } | undefined {
  const label = path || 'input';
  if (schema.type !== undefined) {
    const types = (Array.isArray(schema.type) ? schema.type : [schema.type]) as string[];
    if (!types.some((t) => (TYPE_CHECKS[t] ?? (() => true))(input))) return { field: path || undefined, message: `${label} must be of type ${types.join(' or ')}` };
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => JSON.stringify(v) === JSON.stringify(input))) {
    return { field: path || undefined, message: `${label} must be one of ${JSON.stringify(schema.enum)}` };
  }
  if (TYPE_CHECKS.object!(input)) {
    const record = input as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const name of (schema.required as string[] | undefined) ?? []) {
      const field = path ? `${path}.${name}` : name;
      if (!(name in record)) return { field, message: `missing required field ${field}` };
    }
    for (const [name, value] of Object.entries(record)) {
      const field = path ? `${path}.${name}` : name;
      if (properties[name]) {
        const problem = validateToolInput(properties[name]!, value, field);
        if (problem) return problem;
      } else if (schema.additionalProperties === false) {
        return { field, message: `unexpected field ${field}` };
      }
    }
  }
  if (Array.isArray(input) && schema.items && typeof schema.items === 'object') {
    for (let i = 0; i < input.length; i++) {
      const problem = validateToolInput(schema.items as Record<string, unknown>, input[i], `${path}[${i}]`);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** The JSON error envelope of a failed tool result (model-readable). */
export function toolErrorEnvelope(code: string, message: string, options: { field?: string; retryable?: boolean } = {}): string {
  return JSON.stringify({ error: { code, message, ...(options.field ? { field: options.field } : {}), retryable: options.retryable ?? false } });
}
