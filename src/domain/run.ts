/**
 * Pure rules of an agent run, shared by the workflow (deterministic) and its activities.
 * No I/O and no imports beyond other pure modules.
 */
export const STOP_REASONS = ['end_turn', 'max_iterations', 'max_tokens', 'model_context_window_exceeded', 'user_cancelled', 'client_tool_use'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export const RUN_ERROR_CODES = [
  'upstream_error',
  'rate_limit_error',
  'context_exceeded',
  'upstream_timeout',
  'invalid_tool_schema',
  'toolset_incomplete',
  'run_timeout',
  'run_interrupted',
  'run_abandoned',
  'internal_error',
] as const;
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

export const CLIENT_SAFE_MESSAGES: Record<RunErrorCode, string> = {
  upstream_error: 'The model provider returned an error.',
  rate_limit_error: 'The model provider is rate limiting requests; try again shortly.',
  context_exceeded: 'The conversation no longer fits the model context window, even after compaction.',
  upstream_timeout: 'The model provider did not answer in time.',
  invalid_tool_schema: "One of the agent's tools has an invalid input schema.",
  toolset_incomplete: "The agent declares tools this environment does not serve; retrying will not help until the agent's tools are corrected.",
  run_timeout: 'The run exceeded its time limit.',
  run_interrupted: 'The run was interrupted before it could finish.',
  run_abandoned: 'The run waited for client tool results that never arrived.',
  internal_error: 'An internal error ended the run.',
};

/**
 * Credits during a run. The api refuses run-starting requests on an exhausted balance; a run
 * already going checks before each model call, counting what its current cycle has used and
 * not yet been billed for (a cycle is billed when it closes), and the caller subtracts what the
 * project's other runs in flight have not been billed for: so a small balance cannot pay for
 * a long tool loop, nor for many at once. Concurrent runs overshoot only by the model calls in
 * flight at once. The spec's run
 * error codes have no credits code: the run ends `rate_limit_error` (a quota), with this message.
 */
export const creditsExhaustedForRun = (balanceNano: bigint, unbilledCreditsNano: number): boolean => balanceNano - BigInt(unbilledCreditsNano) <= 0n;
export const CREDITS_EXHAUSTED_MESSAGE = "The project's credit balance is exhausted; grant or top up credits, then send the message again.";

export const isRunErrorCode = (value: unknown): value is RunErrorCode => (RUN_ERROR_CODES as readonly unknown[]).includes(value);

export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  credits_nano: number;
  /**
   * Of `output_tokens`, those spent on reasoning: for the run's usage rows (analytics). Event
   * `usage` objects do not carry it (the spec names their fields); histories recorded before
   * it existed lack it, hence optional.
   */
  reasoning_tokens?: number;
  /**
   * The same counts per model id: an agent's model may change between a run's turns, and the
   * run's usage rows are written per model. Internal like `reasoning_tokens`; older histories lack it.
   */
  by_model?: Record<string, ModelUsage>;
}

/** One model's share of a run's usage. */
export type ModelUsage = Omit<RunUsage, 'by_model'>;

export const zeroUsage = (): RunUsage => ({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, credits_nano: 0, reasoning_tokens: 0 });

const USAGE_COUNTS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'credits_nano', 'reasoning_tokens'] as const;

function addCounts(a: Partial<ModelUsage>, b: Partial<ModelUsage>, sign = 1): ModelUsage {
  const out = {} as Required<ModelUsage>;
  for (const field of USAGE_COUNTS) out[field] = (a[field] ?? 0) + sign * (b[field] ?? 0);
  return out;
}

export function addUsage(a: RunUsage, b: Partial<RunUsage>): RunUsage {
  const sum: RunUsage = addCounts(a, b);
  if (a.by_model || b.by_model) {
    const byModel: Record<string, ModelUsage> = { ...a.by_model };
    for (const [model, usage] of Object.entries(b.by_model ?? {})) byModel[model] = addCounts(byModel[model] ?? {}, usage);
    sum.by_model = byModel;
  }
  return sum;
}

/**
 * A run's usage as rows per model: each model's share, and whatever the shares do not cover
 * (usage recorded before shares were kept) under `fallbackModel`. Rows with nothing are left out.
 * Sorted by model: each row's insert locks its analytics rollup rows, and transactions that
 * take them in one order cannot deadlock on each other.
 */
export function usageByModel(usage: RunUsage, fallbackModel: string): Array<{ model: string; usage: ModelUsage }> {
  const rows = Object.entries(usage.by_model ?? {}).map(([model, share]) => ({ model, usage: addCounts(share, {}) }));
  let rest: ModelUsage = addCounts(usage, {});
  for (const row of rows) rest = addCounts(rest, row.usage, -1);
  const fallback = rows.find((row) => row.model === fallbackModel);
  if (fallback) fallback.usage = addCounts(fallback.usage, rest);
  else rows.push({ model: fallbackModel, usage: rest });
  return rows.filter((row) => USAGE_COUNTS.some((field) => row.usage[field] !== 0)).sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}

/** What one model turn tells the workflow. */
export interface TurnOutcome {
  /** `tool_use` when the model called tools; otherwise the run's stop reason. */
  stop: 'tool_use' | 'end_turn' | 'max_tokens' | 'model_context_window_exceeded';
  /** Calls the gateway executes itself (echo, random_number, deferred-tool search/load, knowledge base). */
  serverToolCalls: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  /** Calls the client must answer (custom tools). */
  clientToolCalls: Array<{ id: string; name: string }>;
  usage: RunUsage;
  /** Input + output tokens of this turn. */
  contextTokens: number;
  /** True when the context would not fit and the turn was not sent: compact first. */
  needsCompaction?: boolean;
}

/** A W3C traceparent for a tool call, derived from ids (deterministic, so replay-safe). */
export function traceparentFor(traceId32Hex: string, spanId16Hex: string): string {
  return `00-${traceId32Hex}-${spanId16Hex}-01`;
}
