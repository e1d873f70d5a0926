import Ajv, { type AnySchema } from 'ajv';
import { z } from 'zod';
import Ajv2020 from 'ajv/dist/2020';

/**
 * Checks that a tool's `input_schema` is a usable JSON Schema: a JSON object that its
 * meta-schema accepts and that compiles. Draft-07 unless the schema declares 2020-12.
 * Unknown keywords are allowed (providers ignore them), so `strict` is off.
 * Returns an error message, or undefined when the schema is valid.
 */
const draft07 = new Ajv({ strict: false, allErrors: false, validateFormats: false });
const draft2020 = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function jsonSchemaError(schema: unknown): string | undefined {
  if (!isPlainObject(schema)) return 'must be a JSON Schema object';
  // Tool inputs are always objects: providers refuse any other top-level type.
  if (schema.type !== undefined && schema.type !== 'object') return "must describe an object (top-level type 'object')";
  const ajv = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft07;
  try {
    if (!ajv.validateSchema(schema as AnySchema)) {
      const first = ajv.errors?.[0];
      return `is not a valid JSON Schema: ${first ? `${first.instancePath || '/'} ${first.message}` : 'rejected by the meta-schema'}`;
    }
    ajv.compile(schema as AnySchema);
    // compile caches by schema object identity; drop it so the cache does not grow per request
    ajv.removeSchema(schema as AnySchema);
    return undefined;
  } catch (error) {
    return `is not a valid JSON Schema: ${(error as Error).message}`;
  }
}

// Clients send the same tools with every request: a verdict is kept per schema text (small
// schemas only, a bounded number), so a repeated schema is not compiled again.
const VERDICT_CACHE_ENTRIES = 500;
const VERDICT_CACHE_MAX_CHARS = 16_384;
const verdicts = new Map<string, string | undefined>();

function cachedJsonSchemaError(schema: unknown): string | undefined {
  if (!isPlainObject(schema)) return jsonSchemaError(schema);
  const key = JSON.stringify(schema);
  if (verdicts.has(key)) return verdicts.get(key);
  const verdict = jsonSchemaError(schema);
  if (key.length <= VERDICT_CACHE_MAX_CHARS) {
    if (verdicts.size >= VERDICT_CACHE_ENTRIES) verdicts.delete(verdicts.keys().next().value!);
    verdicts.set(key, verdict);
  }
  return verdict;
}

/** A tool's input schema (agents' tools, chat completions' `parameters`, messages' `input_schema`). */
export const ToolInputSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    const error = cachedJsonSchemaError(value);
    if (error) ctx.addIssue({ code: 'custom', message: error });
  })
  .transform((value) => value as Record<string, unknown>);
