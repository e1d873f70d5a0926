import Ajv, { type AnySchema, type ValidateFunction } from 'ajv';
import { z } from 'zod';
import Ajv2020 from 'ajv/dist/2020';

/**
 * Checks that a tool's `input_schema` is a usable JSON Schema: a JSON object that its
 * meta-schema accepts and, where the gateway itself validates inputs against it (an agent's
 * tools), that compiles. Draft-07 unless the schema declares 2020-12; another declared draft
 * (draft-04, 2019-09) is read as draft-07, as providers read it. Unknown keywords are allowed
 * (providers ignore them), so `strict` is off. Returns an error message, or undefined.
 *
 * The meta-schema check is cheap (microseconds; a few ms for a schema of a megabyte), so the
 * gateway routes run it on every request. Compiling is not (hundreds of ms for a very large
 * schema, and it blocks the process meanwhile): only schemas up to COMPILE_MAX_CHARS are compiled.
 */
function instances(): { draft07: Ajv; draft2020: Ajv } {
  const options = { strict: false, allErrors: false, validateFormats: false };
  const pair = { draft07: new Ajv(options), draft2020: new Ajv2020(options) };
  // Ajv refuses draft-04's `id` outright; read as draft-07, it is an unknown keyword, ignored as
  // providers ignore it.
  for (const ajv of Object.values(pair)) ajv.removeKeyword('id');
  return pair;
}
let current = instances();
// Every compile leaves its code in the instance's scope, which removeSchema does not clear: the
// instances are replaced after this many compiles (a new pair costs 25-70 ms), so tenants'
// schemas cannot grow the process without bound.
const COMPILES_PER_INSTANCE = 500;
let compiles = 0;
const COMPILE_MAX_CHARS = 64 * 1024;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function jsonSchemaError(schema: unknown, options: { compile: boolean }): string | undefined {
  if (!isPlainObject(schema)) return 'must be a JSON Schema object';
  // Tool inputs are always objects: providers refuse any other top-level type.
  if (schema.type !== undefined && schema.type !== 'object') return "must describe an object (top-level type 'object')";
  const { ajv, checked } = asRead(schema);
  try {
    if (!ajv.validateSchema(checked)) {
      const first = ajv.errors?.[0];
      return `is not a valid JSON Schema: ${first ? `${first.instancePath || '/'} ${first.message}` : 'rejected by the meta-schema'}`;
    }
    if (options.compile && JSON.stringify(checked).length <= COMPILE_MAX_CHARS) compileOnce(ajv, checked);
    return undefined;
  } catch (error) {
    return `is not a valid JSON Schema: ${(error as Error).message}`;
  }
}

/** The instance that reads a schema, and the schema as it reads it (another declared draft is dropped). */
function asRead(schema: Record<string, unknown>): { ajv: Ajv; checked: AnySchema } {
  const is2020 = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
  const { $schema: _declared, ...undeclared } = schema;
  return { ajv: is2020 ? current.draft2020 : current.draft07, checked: (is2020 || schema.$schema === undefined ? schema : undeclared) as AnySchema };
}

/**
 * Compiles and forgets: the instance is shared by every request and tenant, so nothing of one
 * schema may stay in it (a failed compile still registers the schema's `$id`, which would refuse
 * the next schema of another tenant with the same `$id`, or let its `$ref`s resolve to it).
 */
function compileOnce(ajv: Ajv, schema: AnySchema): ValidateFunction {
  // Nested `$id`s register too, and removeSchema(schema) drops only the root's: every id the
  // compile added is removed by name. (A fresh instance per compile would cost 25-70 ms.)
  const known = new Set(Object.keys(ajv.refs));
  if (++compiles >= COMPILES_PER_INSTANCE) {
    // This compile still uses `ajv`; the next ones get a fresh pair, and this one goes with the
    // last validator compiled by it.
    current = instances();
    compiles = 0;
  }
  try {
    const validate = ajv.compile(schema);
    // An async schema's validator answers with a promise, which `if (validate(x))` would
    // read as valid, and whose rejection nobody would handle.
    if ((validate as { $async?: boolean }).$async) throw new Error('$async schemas are not supported');
    return validate;
  } finally {
    ajv.removeSchema(schema);
    for (const id of Object.keys(ajv.refs)) if (!known.has(id)) ajv.removeSchema(id);
  }
}

/**
 * A validator for a tool's inputs, read as jsonSchemaError reads the schema, whatever its
 * size. Throws when the schema cannot be compiled (e.g. a `$ref` to nothing).
 */
export function compileToolInputSchema(schema: Record<string, unknown>): ValidateFunction {
  const { ajv, checked } = asRead(schema);
  return compileOnce(ajv, checked);
}

/** A tool's input schema, checked by jsonSchemaError with these options. */
const toolInputSchema = (options: { compile: boolean }) =>
  z
    .unknown()
    .superRefine((value, ctx) => {
      const error = jsonSchemaError(value, options);
      if (error) ctx.addIssue({ code: 'custom', message: error });
    })
    .transform((value) => value as Record<string, unknown>);

/** An agent tool's input schema: the gateway validates tool inputs against it, so it must compile. */
export const AgentToolInputSchema = toolInputSchema({ compile: true });

/** A tool's input schema on the gateway routes (chat completions' `parameters`, messages' `input_schema`): checked, passed on. */
export const ToolInputSchema = toolInputSchema({ compile: false });
