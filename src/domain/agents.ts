import { z } from 'zod';
import { CATALOG_MAX_OUTPUT_TOKENS, findModel, hasCapability, isMediaModelId } from '../providers/catalog';
import { toolsSchema, type ToolEntry } from './agent-tool-entries';
import { chars, metadataKey, metadataMap, metadataValue, METADATA_LIMITS, nonEmptyChars, openObject, pageLimit, utf8Bytes, isPlainObject } from './fields';

/** Every agent limit of the spec's field table and Limits table. */
export const AGENT_LIMITS = {
  nameChars: 255,
  modelChars: 255,
  descriptionChars: 4096,
  systemPromptChars: 32768,
  maxTokensMin: 1,
  maxTokensMax: 200_000,
  temperatureMin: 0,
  temperatureMax: 2,
  settingsKeys: 32,
  settingsBytes: 4096,
  mcpServers: 20,
  tools: 128,
  skills: 64,
  projectIdChars: 64,
  reasoningEffortChars: 64,
} as const;

/**
 * The scopes a site offers its agents. Agent `scopes` must be drawn from this list
 * (the sites table has no per-site scope list, so every site offers the same ones).
 */
export const SITE_SCOPES = ['chat', 'search', 'image', 'speech', 'transcribe', 'mcp'] as const;

/** `scopes` and `settings` surface as top-level fields, so they may not be metadata keys. */
export const RESERVED_METADATA_KEYS = ['scopes', 'settings'] as const;

const name = nonEmptyChars(AGENT_LIMITS.nameChars);
const model = chars(AGENT_LIMITS.modelChars).refine((v) => /^[^/\s]+\/\S+$/.test(v), "must have the form '<provider>/<model-name>'");
const description = chars(AGENT_LIMITS.descriptionChars);
const systemPrompt = chars(AGENT_LIMITS.systemPromptChars);
const temperature = z
  .number({ error: 'must be a number' })
  .min(AGENT_LIMITS.temperatureMin, `must be at least ${AGENT_LIMITS.temperatureMin}`)
  .max(AGENT_LIMITS.temperatureMax, `must be at most ${AGENT_LIMITS.temperatureMax}`);
const maxTokens = z
  .number({ error: 'must be an integer' })
  .int('must be an integer')
  .min(AGENT_LIMITS.maxTokensMin, `must be at least ${AGENT_LIMITS.maxTokensMin}`)
  .max(AGENT_LIMITS.maxTokensMax, `must be at most ${AGENT_LIMITS.maxTokensMax}`);
const reasoningEffort = z.string({ error: 'must be a string' }).max(AGENT_LIMITS.reasoningEffortChars);
const scopes = z.array(z.enum(SITE_SCOPES, { error: `must be one of the site's scopes: ${SITE_SCOPES.join(', ')}` }));
const settings = openObject
  .refine((s) => Object.keys(s).length <= AGENT_LIMITS.settingsKeys, `must have at most ${AGENT_LIMITS.settingsKeys} keys`)
  .refine((s) => utf8Bytes(JSON.stringify(s)) <= AGENT_LIMITS.settingsBytes, `must be at most ${AGENT_LIMITS.settingsBytes} bytes serialized`);
const mcpServers = z.array(openObject).max(AGENT_LIMITS.mcpServers, `must have at most ${AGENT_LIMITS.mcpServers} items`);
const skills = z.array(openObject).max(AGENT_LIMITS.skills, `must have at most ${AGENT_LIMITS.skills} items`);
const tools = toolsSchema(AGENT_LIMITS.tools);
const projectId = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }).min(1, 'must not be empty').max(AGENT_LIMITS.projectIdChars);

/** A per-key metadata patch: a string adds or updates the key, null deletes it. */
export function metadataPatchSchema(reserved: readonly string[] = []) {
  return z.record(metadataKey, metadataValue.nullable()).superRefine((m, ctx) => {
    for (const key of reserved) {
      if (Object.hasOwn(m, key)) ctx.addIssue({ code: 'custom', path: [key], message: `the key '${key}' is reserved; use the top-level field` });
    }
  });
}

/**
 * Applies a per-key metadata patch (omitted keys kept). The key limit applies to the
 * result, so a patch may add a key while deleting another at the limit.
 */
export function applyMetadataPatch(current: Record<string, string>, patch: Record<string, string | null> | undefined): { metadata: Record<string, string> } | { error: FieldError } {
  const metadata = { ...current };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null) delete metadata[key];
    else metadata[key] = value;
  }
  if (Object.keys(metadata).length > METADATA_LIMITS.keys) {
    return { error: { param: 'metadata', message: `metadata: must have at most ${METADATA_LIMITS.keys} keys after the update` } };
  }
  return { metadata };
}

/** PATCH fields that may change but never be cleared: null is a 400 naming the field. */
const notNull = <T extends z.ZodType>(schema: T, field: string) =>
  schema.nullable().optional().refine((v) => v !== null, `${field} cannot be cleared`);

/** Fields optional on create and clearable with null on PATCH (the PATCH rules refine empty values). */
const OPTIONAL_FIELDS = {
  description: description.nullish(),
  system_prompt: systemPrompt.nullish(),
  temperature: temperature.nullish(),
  max_tokens: maxTokens.nullish(),
  reasoning_effort: reasoningEffort.nullish(),
  scopes: scopes.nullish(),
  settings: settings.nullish(),
  mcp_servers: mcpServers.nullish(),
  tools: tools.nullish(),
  skills: skills.nullish(),
};

export const AgentCreateSchema = z.strictObject({
  type: z.literal('agent').optional(),
  project_id: projectId,
  name,
  model,
  ...OPTIONAL_FIELDS,
  metadata: metadataMap(RESERVED_METADATA_KEYS).optional(),
});
export type AgentCreate = z.infer<typeof AgentCreateSchema>;

/** PATCH: omitted = unchanged; null clears (where allowed); metadata is a per-key patch. */
export const AgentPatchSchema = z.strictObject({
  type: z.literal('agent').optional(),
  project_id: notNull(projectId, 'project_id'),
  name: notNull(name, 'name'),
  model: notNull(model, 'model'),
  ...OPTIONAL_FIELDS,
  metadata: metadataPatchSchema(RESERVED_METADATA_KEYS).optional(),
});
export type AgentPatch = z.infer<typeof AgentPatchSchema>;

export const AgentListQuerySchema = z.strictObject({
  project_id: projectId,
  limit: pageLimit,
  page: z.string().min(1).max(512).optional(),
});

/** The stored, mutable fields of an agent (null = unset). */
export interface AgentFields {
  project_id: string;
  name: string;
  model: string;
  description: string | null;
  system_prompt: string | null;
  temperature: number | null;
  max_tokens: number | null;
  reasoning_effort: string | null;
  scopes: string[] | null;
  settings: Record<string, unknown> | null;
  mcp_servers: Record<string, unknown>[] | null;
  tools: ToolEntry[] | null;
  skills: Record<string, unknown>[] | null;
  metadata: Record<string, string>;
}

export interface FieldError {
  message: string;
  param: string;
}

// Empty values that mean "unset": stored as null so responses and rules see one shape.
const emptyToNull = <T>(value: T | null | undefined, isEmpty: (v: T) => boolean): T | null =>
  value === undefined || value === null || isEmpty(value) ? null : value;
const emptyString = (v: string) => v === '';
const emptyArray = (v: unknown[]) => v.length === 0;
const emptyObject = (v: Record<string, unknown>) => isPlainObject(v) && Object.keys(v).length === 0;

export function agentFieldsFromCreate(input: AgentCreate): AgentFields {
  return {
    project_id: input.project_id,
    name: input.name,
    model: input.model,
    // (An empty string is "unset" here as in a PATCH, so the two never disagree.)
    description: emptyToNull(input.description, emptyString),
    system_prompt: emptyToNull(input.system_prompt, emptyString),
    temperature: input.temperature ?? null,
    max_tokens: input.max_tokens ?? null,
    reasoning_effort: emptyToNull(input.reasoning_effort, emptyString),
    scopes: input.scopes ?? null,
    settings: input.settings ?? null,
    mcp_servers: input.mcp_servers ?? null,
    tools: input.tools ?? null,
    skills: input.skills ?? null,
    metadata: input.metadata ?? {},
  };
}

/**
 * The catalog rules: the model exists and supports tools; temperature is within the
 * model's published range (a model without temperature support rejects any value);
 * reasoning_effort is in the model's enum (a model publishing none rejects any value);
 * max_tokens is not above the catalog-wide output maximum.
 */
export function modelRuleError(fields: Pick<AgentFields, 'model' | 'temperature' | 'reasoning_effort' | 'max_tokens'>): FieldError | undefined {
  const record = findModel(fields.model);
  if (!record) {
    const kind = isMediaModelId(fields.model) ? 'is a media model; agents need a chat model' : 'unknown model';
    return { param: 'model', message: `model: '${fields.model}' ${kind}; see GET /v1/models` };
  }
  if (!hasCapability(record, 'tools')) return { param: 'model', message: `model: '${fields.model}' does not support the 'tools' capability` };
  if (fields.temperature !== null) {
    const error = temperatureError(fields.model, fields.temperature);
    if (error) return { param: 'temperature', message: `temperature: ${error}` };
  }
  if (fields.reasoning_effort !== null) {
    const error = reasoningEffortError(fields.model, fields.reasoning_effort);
    if (error) return { param: 'reasoning_effort', message: `reasoning_effort: ${error}` };
  }
  if (fields.max_tokens !== null && fields.max_tokens > CATALOG_MAX_OUTPUT_TOKENS) {
    return { param: 'max_tokens', message: `max_tokens: must be at most ${CATALOG_MAX_OUTPUT_TOKENS} (the catalog-wide output maximum)` };
  }
  return undefined;
}

/**
 * Why `temperature` is not accepted by `modelId`, or undefined when it is. The catalog's
 * `parameters.temperature` gives support and an inclusive range; a model without the
 * record, or with `supported: false`, accepts no temperature at all (0 included).
 */
export function temperatureError(modelId: string, temperature: number): string | undefined {
  const range = findModel(modelId)?.parameters.temperature;
  if (!range?.supported) return `model '${modelId}' does not support temperature; omit it or send null`;
  if (temperature < range.min || temperature > range.max) return `must be between ${range.min} and ${range.max} for model '${modelId}'`;
  return undefined;
}

/** Why `effort` is not accepted by `modelId`, or undefined when it is. */
/** The reasoning_effort values a model takes (none for a model without the parameter). */
export const acceptedReasoningEfforts = (modelId: string): readonly string[] => findModel(modelId)?.parameters.reasoning_effort ?? [];

export function reasoningEffortError(modelId: string, effort: string): string | undefined {
  const accepted = acceptedReasoningEfforts(modelId);
  if (accepted.includes(effort)) return undefined;
  return accepted.length === 0
    ? `model '${modelId}' accepts no reasoning_effort`
    : `must be one of ${accepted.join(', ')} for model '${modelId}'`;
}

/**
 * Applies a PATCH to the stored fields, field class by field class, then the catalog rules
 * to what the request changes. Omitted fields stay as stored (the spec), even where the
 * catalog has since moved on, so an update of one field never fails over another. A model
 * change clears a stored reasoning_effort the new model does not accept (the spec), and a
 * stored temperature it does not accept (unsupported, or outside its range) the same way,
 * so a model switch never needs a second field to succeed; a value the same request sends
 * is validated instead (400).
 */
export function applyAgentPatch(current: AgentFields, patch: AgentPatch): { fields: AgentFields } | { error: FieldError } {
  const next: AgentFields = { ...current };
  if (patch.project_id) next.project_id = patch.project_id;
  if (patch.name) next.name = patch.name;
  if (patch.model) next.model = patch.model;
  if (patch.description !== undefined) next.description = emptyToNull(patch.description, emptyString);
  if (patch.system_prompt !== undefined) next.system_prompt = emptyToNull(patch.system_prompt, emptyString);
  if (patch.temperature !== undefined) next.temperature = patch.temperature;
  if (patch.max_tokens !== undefined) next.max_tokens = patch.max_tokens;
  if (patch.reasoning_effort !== undefined) next.reasoning_effort = emptyToNull(patch.reasoning_effort, emptyString);
  if (patch.scopes !== undefined) next.scopes = emptyToNull(patch.scopes, emptyArray);
  if (patch.settings !== undefined) next.settings = emptyToNull(patch.settings, emptyObject);
  if (patch.mcp_servers !== undefined) next.mcp_servers = emptyToNull(patch.mcp_servers, emptyArray);
  if (patch.tools !== undefined) next.tools = emptyToNull(patch.tools, emptyArray);
  if (patch.skills !== undefined) next.skills = emptyToNull(patch.skills, emptyArray);
  const metadata = applyMetadataPatch(current.metadata, patch.metadata);
  if ('error' in metadata) return metadata;
  next.metadata = metadata.metadata;

  const modelChanged = next.model !== current.model;
  if (modelChanged && patch.reasoning_effort === undefined && next.reasoning_effort !== null && reasoningEffortError(next.model, next.reasoning_effort)) {
    next.reasoning_effort = null;
  }
  if (modelChanged && patch.temperature === undefined && next.temperature !== null && temperatureError(next.model, next.temperature)) {
    next.temperature = null;
  }
  const sent = { model: patch.model !== undefined, temperature: patch.temperature !== undefined, reasoning_effort: patch.reasoning_effort !== undefined, max_tokens: patch.max_tokens !== undefined };
  if (!sent.model && !sent.temperature && !sent.reasoning_effort && !sent.max_tokens) return { fields: next };
  const error = modelRuleError({
    model: next.model,
    temperature: modelChanged || sent.temperature ? next.temperature : null,
    reasoning_effort: modelChanged || sent.reasoning_effort ? next.reasoning_effort : null,
    max_tokens: sent.max_tokens ? next.max_tokens : null,
  });
  return error ? { error } : { fields: next };
}
