import type { estypes } from '@elastic/elasticsearch';
import { CALENDAR_INTERVALS, KB_LIMITS, type AggregationResult, type AggregationSpec } from '../domain/kb';

// Dates come back as RFC 3339 in UTC with milliseconds.
const DATE_FORMAT = 'strict_date_time';

export function buildAggregations(specs: Record<string, AggregationSpec>): Record<string, estypes.AggregationsAggregationContainer> {
  const aggs: Record<string, estypes.AggregationsAggregationContainer> = {};
  for (const [name, spec] of Object.entries(specs)) {
    switch (spec.type) {
      case 'terms':
        aggs[name] = { terms: { field: spec.field, size: spec.size ?? KB_LIMITS.termsSizeDefault } };
        break;
      case 'date_histogram': {
        const interval = spec.interval!;
        const calendar = (CALENDAR_INTERVALS as readonly string[]).includes(interval);
        aggs[name] = {
          date_histogram: {
            field: spec.field,
            format: DATE_FORMAT,
            ...(calendar ? { calendar_interval: interval as estypes.AggregationsCalendarInterval } : { fixed_interval: interval }),
          },
        };
        break;
      }
      case 'min':
      case 'max':
        aggs[name] = { [spec.type]: { field: spec.field, format: DATE_FORMAT } };
        break;
    }
  }
  return aggs;
}

type Bucket = { key: string | number; key_as_string?: string; doc_count: number };

const YEAR_0_MS = Date.parse('0000-01-01T00:00:00.000Z');

/**
 * A date bucket's key, RFC 3339. Fixed and week intervals are aligned to 1970-01-01, so the
 * first bucket can start before year 0, which RFC 3339 cannot write (`-0001-12-30`): it is
 * keyed 0000-01-01, where its documents begin (none is dated earlier).
 */
function bucketStart(bucket: Bucket): string {
  const start = Number(bucket.key);
  if (Number.isFinite(start) && start < YEAR_0_MS) return new Date(YEAR_0_MS).toISOString();
  return bucket.key_as_string ?? new Date(start).toISOString();
}

export function presentAggregations(
  specs: Record<string, AggregationSpec>,
  raw: Record<string, estypes.AggregationsAggregate> | undefined,
): Record<string, AggregationResult> {
  const out: Record<string, AggregationResult> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const agg = raw?.[name] as Record<string, unknown> | undefined;
    if (spec.type === 'terms') {
      const buckets = (agg?.buckets as Bucket[] | undefined) ?? [];
      out[name] = {
        buckets: buckets.map((b) => ({ key: String(b.key_as_string ?? b.key), doc_count: b.doc_count })),
        other_doc_count: (agg?.sum_other_doc_count as number | undefined) ?? 0,
      };
    } else if (spec.type === 'date_histogram') {
      const buckets = (agg?.buckets as Bucket[] | undefined) ?? [];
      out[name] = { buckets: buckets.map((b) => ({ key: bucketStart(b), doc_count: b.doc_count })) };
    } else {
      // min/max over no documents: Elasticsearch answers value null without value_as_string.
      const value = agg?.value === null || agg?.value === undefined ? null : ((agg.value_as_string as string | undefined) ?? new Date(Number(agg.value)).toISOString());
      out[name] = { value };
    }
  }
  return out;
}
