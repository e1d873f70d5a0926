import { computeCreditsNano, type ModelRecord, type Usage } from '../src/providers';
import type { ModelUsage, RunUsage } from '../src/domain/run';

/** One model call's usage as a run bills it: its tokens, their credits, and the same as that model's share. */
export function pricedUsage(model: ModelRecord, usage: Usage): RunUsage {
  const counts: ModelUsage = {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens,
    credits_nano: computeCreditsNano(model, usage),
    reasoning_tokens: usage.reasoning_tokens,
  };
  return { ...counts, by_model: { [model.id]: counts } };
}

/** A recorded `session.turn_usage` block read back as the run's usage (its model's share included). */
export function turnUsageOf(block: Record<string, unknown>): RunUsage {
  const count = (field: string) => (typeof block[field] === 'number' ? (block[field] as number) : 0);
  const counts: ModelUsage = {
    input_tokens: count('input_tokens'),
    output_tokens: count('output_tokens'),
    cache_read_input_tokens: count('cache_read_input_tokens'),
    cache_creation_input_tokens: count('cache_creation_input_tokens'),
    credits_nano: count('credits_nano'),
    reasoning_tokens: count('reasoning_tokens'),
  };
  return typeof block.model === 'string' ? { ...counts, by_model: { [block.model]: counts } } : counts;
}
