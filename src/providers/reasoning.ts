/**
 * `reasoning_effort` → a thinking token budget, for providers that take a budget
 * (Anthropic `thinking.budget_tokens`, Google `thinkingConfig.thinkingBudget`).
 */
export const THINKING_BUDGETS: Record<string, number> = { none: 0, minimal: 512, low: 1024, medium: 4096, high: 16384 };

/** Anthropic's default output cap when the caller sets none ("one provider family defaults to 8192"). */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;
/** Anthropic refuses thinking budgets below this. */
export const ANTHROPIC_MIN_THINKING_BUDGET = 1024;
