import { z } from 'zod';
import { AgentToolInputSchema } from './json-schema';
import { chars } from './fields';
import { filterValue, LanguageCodeSchema, metadataFilter, metadataFilterValue, StoredDateRangeSchema } from './kb';
import { kbToolName, SEARCH_TOOLS_NAME } from './run-tools';

/**
 * Entries of an agent's `tools`, discriminated by `type`. A `custom` entry may omit
 * `type`. Every entry has a `name` (for the built-in kinds this is the caller-chosen
 * wire identifier), and names are unique across all entries of the agent.
 */
export const TOOL_LIMITS = { nameChars: 64, labelChars: 64, collectionIdChars: 128, ceilingValues: 100 } as const;
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

const toolName = z.string({ error: 'must be a string' }).regex(TOOL_NAME_PATTERN, 'must match ^[a-zA-Z0-9_-]{1,64}$');
const description = z.string({ error: 'must be a string' });

const inputSchema = AgentToolInputSchema;

export const CustomToolSchema = z.strictObject({
  type: z.literal('custom').optional(),
  name: toolName,
  description: description.optional(),
  input_schema: inputSchema.optional(),
  label: chars(TOOL_LIMITS.labelChars).optional(),
  defer_loading: z.boolean().optional(),
});

// ---- the knowledge_base filter ceiling (same dimensions as search filters; null = unconstrained)

const valueList = z.array(filterValue).max(TOOL_LIMITS.ceilingValues);
// Case-insensitive, as search filters are; kept lower-case, as documents store it.
const isoLanguage = LanguageCodeSchema;

export const FilterCeilingSchema = z.strictObject({
  type: valueList.nullish(),
  uri: valueList.nullish(),
  language: z.array(isoLanguage).max(TOOL_LIMITS.ceilingValues).nullish(),
  metadata: metadataFilter(z.array(metadataFilterValue).max(TOOL_LIMITS.ceilingValues)).nullish(),
  created_at: StoredDateRangeSchema.nullish(),
  modified_at: StoredDateRangeSchema.nullish(),
});

export const KnowledgeBaseToolSchema = z.strictObject({
  type: z.literal('knowledge_base'),
  name: toolName,
  collection_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(TOOL_LIMITS.collectionIdChars),
  description: description.optional(),
  filters: FilterCeilingSchema.nullish(),
});

export const EchoToolSchema = z.strictObject({ type: z.literal('echo'), name: toolName, description: description.optional() });
export const RandomNumberToolSchema = z.strictObject({ type: z.literal('random_number'), name: toolName, description: description.optional() });

export const ToolEntrySchema = z.discriminatedUnion('type', [CustomToolSchema, KnowledgeBaseToolSchema, EchoToolSchema, RandomNumberToolSchema], {
  error: "unknown tool type; use 'custom' (or omit type), 'knowledge_base', 'echo' or 'random_number'",
});
export type ToolEntry = z.infer<typeof ToolEntrySchema>;

/**
 * Names unique across entries; at most one knowledge_base entry per collection; and no entry
 * named like a tool the runtime adds to the model's list (a knowledge_base entry's
 * `<collection_id>_search` / `_fetch`, `search_tools` when any tool is deferred): providers
 * refuse a list with a name twice, and a call could not be told apart.
 */
export function toolsSchema(maxItems: number) {
  return z
    .array(ToolEntrySchema)
    .max(maxItems, `must have at most ${maxItems} items`)
    .superRefine((tools, ctx) => {
      const names = new Set<string>();
      const collections = new Set<string>();
      const runtimeNames = new Map<string, string>();
      for (const tool of tools) {
        if (tool.type !== 'knowledge_base') continue;
        runtimeNames.set(kbToolName(tool, 'search'), `the knowledge_base entry '${tool.name}'`);
        runtimeNames.set(kbToolName(tool, 'fetch'), `the knowledge_base entry '${tool.name}'`);
      }
      if (tools.some((tool) => 'defer_loading' in tool && tool.defer_loading)) runtimeNames.set(SEARCH_TOOLS_NAME, 'the deferred-tool search');
      tools.forEach((tool, index) => {
        if (names.has(tool.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate tool name '${tool.name}'` });
        names.add(tool.name);
        if (tool.type !== 'knowledge_base' && runtimeNames.has(tool.name)) {
          ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `tool name '${tool.name}' is taken by a tool the gateway adds (${runtimeNames.get(tool.name)})` });
        }
        if (tool.type === 'knowledge_base') {
          if (collections.has(tool.collection_id)) {
            ctx.addIssue({ code: 'custom', path: [index, 'collection_id'], message: `collection '${tool.collection_id}' already has a knowledge_base entry` });
          }
          collections.add(tool.collection_id);
        }
      });
    });
}

/**
 * The collections the agent's `knowledge_base` entries name, with each entry's index in
 * `tools` so a missing collection can be reported as `tools.N.collection_id`.
 */
export function knowledgeBaseCollections(tools: readonly ToolEntry[] | null): { index: number; collectionId: string }[] {
  const entries: { index: number; collectionId: string }[] = [];
  (tools ?? []).forEach((tool, index) => {
    if (tool.type === 'knowledge_base') entries.push({ index, collectionId: tool.collection_id });
  });
  return entries;
}
