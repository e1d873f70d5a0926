import { addUsage, usageByModel, zeroUsage, type ModelUsage } from '../../../src/domain/run';

const counts = (input: number, credits: number): ModelUsage => ({
  input_tokens: input,
  output_tokens: 1,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
  credits_nano: credits,
  reasoning_tokens: 0,
});
const priced = (model: string, input: number, credits: number) => ({ ...counts(input, credits), by_model: { [model]: counts(input, credits) } });

describe("a run's usage per model", () => {
  test('addUsage sums the totals and each model share', () => {
    const total = [priced('a/x', 10, 100), priced('b/y', 5, 50), priced('a/x', 1, 10)].reduce(addUsage, zeroUsage());
    expect(total).toMatchObject({ input_tokens: 16, output_tokens: 3, credits_nano: 160 });
    expect(total.by_model).toEqual({ 'a/x': { ...counts(11, 110), output_tokens: 2 }, 'b/y': counts(5, 50) });
  });

  test('usageByModel: one row per model; usage without shares goes to the fallback model; empty rows are dropped', () => {
    const shareless = counts(7, 70); // a turn recorded before shares were kept
    const total = [priced('a/x', 10, 100), shareless, priced('b/y', 5, 50)].reduce(addUsage, zeroUsage());
    const rows = usageByModel(total, 'a/x');
    expect(rows).toEqual([
      { model: 'a/x', usage: { ...counts(17, 170), output_tokens: 2 } },
      { model: 'b/y', usage: counts(5, 50) },
    ]);
    // The rows always add up to the charge.
    expect(rows.reduce((sum, row) => sum + row.usage.credits_nano, 0)).toBe(total.credits_nano);
    expect(usageByModel(priced('b/y', 5, 50), 'a/x')).toEqual([{ model: 'b/y', usage: counts(5, 50) }]);
    expect(usageByModel(zeroUsage(), 'a/x')).toEqual([]);
    // In model order, whichever came first in the run (rows lock their rollups in that order).
    expect(usageByModel([priced('z/late', 1, 1), priced('b/y', 1, 1)].reduce(addUsage, zeroUsage()), 'z/late').map((row) => row.model)).toEqual(['b/y', 'z/late']);
  });
});
