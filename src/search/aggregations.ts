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
      out[name] = { buckets: buckets.map((b) => ({ key: b.key_as_string ?? new Date(Number(b.key)).toISOString(), doc_count: b.doc_count })) };
    } else {
      // min/max over no documents: Elasticsearch answers value null without value_as_string.
      const value = agg?.value === null || agg?.value === undefined ? null : ((agg.value_as_string as string | undefined) ?? new Date(Number(agg.value)).toISOString());
      out[name] = { value };
    }
  }
  return out;
}
