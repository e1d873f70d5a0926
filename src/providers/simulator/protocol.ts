import type { Plan, SimError, SimInput } from './script';

/** One wire protocol the simulator speaks. */
export interface SimProtocol {
  parse(body: Record<string, unknown>, rawBody: string, pathModel?: string): SimInput & { stream: boolean; options: Record<string, unknown> };
  render(plan: Plan, options: Record<string, unknown>): unknown;
  /** SSE messages (each a complete `event:`/`data:` block). */
  streamEvents(plan: Plan, options: Record<string, unknown>): string[];
  error(error: SimError): { status: number; body: unknown; headers?: Record<string, string> };
  /** The provider's error event inside a stream that already began (same body as `error`). */
  streamError(error: SimError): string;
}

export const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const asRecord = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** Splits text in two (tool arguments stream in pieces, as real providers send them). */
export const halves = (text: string): string[] => {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((piece) => piece.length > 0);
};
