import Ajv, { type AnySchema } from 'ajv';
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
