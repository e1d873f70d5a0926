/**
 * Tool-call arguments arrive as JSON text. An empty string means no arguments; text that
 * is not a JSON object is kept under `_raw` so the model's mistake stays visible to the
 * caller (the agent runtime reports it back to the model) instead of being dropped.
 */
export function parseToolInput(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    return { _raw: text };
  } catch {
    return { _raw: text };
  }
}

/**
 * A tool's input schema as providers require it: an object schema with its `type` said (the
 * gateway accepts a schema that leaves it out; Anthropic refuses one without it).
 */
export const objectSchema = (schema: Record<string, unknown>): Record<string, unknown> => (schema.type === undefined ? { type: 'object', ...schema } : schema);
