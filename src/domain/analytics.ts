import { z } from 'zod';
import { APPLICATIONS } from '../billing/usage';

/**
 * GET /v1/analytics: the query, the bucket plan and the response shape. Pure.
 *
 * Buckets are aligned to UTC multiples of their width (10-minute marks, hours, UTC
 * midnights); the first and last are clipped to the window, so `start_time` is inclusive,
 * `end_time` exclusive, and every bucket of the window is listed, empty or not.
 */
export const BUCKET_WIDTHS = { '10m': 600, '1h': 3600, '1d': 86400 } as const;
export type BucketWidth = keyof typeof BUCKET_WIDTHS;
/** Longest window per width: 24 h of 10-minute buckets, 7 days of hours, 30 days of days. */
export const MAX_WINDOW_SECONDS: Record<BucketWidth, number> = { '10m': 86400, '1h': 7 * 86400, '1d': 30 * 86400 };

export const GROUP_BY_DIMENSIONS = ['model', 'operation', 'client_id', 'auth_method', 'actor_type', 'application'] as const;
export type Dimension = (typeof GROUP_BY_DIMENSIONS)[number];
export const DEFAULT_GROUP_BY: Dimension[] = ['model', 'operation'];

export const AUTH_METHODS = ['browser_session', 'api_key', 'service_token', 'okta', 'internal_service', 'unknown'] as const;
export const ACTOR_TYPES = ['anonymous', 'authenticated', 'service', 'unknown'] as const;

const unixSeconds = z
  .string()
  .regex(/^\d{1,12}$/, 'must be a Unix time in whole seconds')
  .transform(Number);

const groupBy = z
  .string()
  .transform((value, ctx) => {
    const parts = value.split(',').map((p) => p.trim());
    const unknown = parts.filter((p) => !(GROUP_BY_DIMENSIONS as readonly string[]).includes(p));
    if (unknown.length > 0 || parts.length === 0) {
      ctx.addIssue({ code: 'custom', message: `unknown dimension '${unknown[0] ?? ''}' (one or more of ${GROUP_BY_DIMENSIONS.join(', ')})` });
      return z.NEVER;
    }
    // Canonical order, duplicates dropped: the order only affects the sort, which is fixed anyway.
    return GROUP_BY_DIMENSIONS.filter((d) => parts.includes(d));
  });

export const AnalyticsQuerySchema = z.strictObject({
  project_id: z.string().min(1).max(64),
  start_time: unixSeconds,
  end_time: unixSeconds.optional(),
  bucket_width: z.enum(['10m', '1h', '1d']).default('1d'),
  client_id: z.string().min(1, 'must name a registered site (usage without a site cannot be selected)').max(255).optional(),
  auth_method: z.enum(AUTH_METHODS).optional(),
  actor_type: z.enum(ACTOR_TYPES).optional(),
  application: z.enum(APPLICATIONS).optional(),
  group_by: groupBy.optional(),
});
export type AnalyticsQueryInput = z.infer<typeof AnalyticsQuerySchema>;

export interface AnalyticsQuery {
  projectId: string;
  start: number; // Unix seconds, inclusive
  end: number; // Unix seconds, exclusive
  width: BucketWidth;
  groupBy: Dimension[];
  filters: Partial<Record<'client_id' | 'auth_method' | 'actor_type' | 'application', string>>;
}

/** Applies defaults and the window rules; returns the problem as [field, message] when invalid. */
export function resolveQuery(input: AnalyticsQueryInput, nowSeconds: number): AnalyticsQuery | [string, string] {
  const end = input.end_time ?? nowSeconds;
  if (end <= input.start_time) return ['end_time', 'must be after start_time'];
  const max = MAX_WINDOW_SECONDS[input.bucket_width];
  if (end - input.start_time > max) {
    return ['start_time', `the window of bucket_width ${input.bucket_width} is at most ${max / 3600} hours`];
  }
  const filters: AnalyticsQuery['filters'] = {};
  for (const name of ['client_id', 'auth_method', 'actor_type', 'application'] as const) if (input[name] !== undefined) filters[name] = input[name];
  return { projectId: input.project_id, start: input.start_time, end, width: input.bucket_width, groupBy: input.group_by ?? DEFAULT_GROUP_BY, filters };
}

/** A slice of the window read from one source: a rollup grain or the raw usage rows. */
export type Grain = '1d' | '1h' | '10m' | 'raw';
export interface Piece {
  grain: Grain;
  from: number;
  to: number;
}
const GRAIN_SECONDS: [Exclude<Grain, 'raw'>, number][] = [['1d', 86400], ['1h', 3600], ['10m', 600]];

/**
 * Covers [start, end) with the coarsest rollup rows that lie wholly inside it and inside
 * one bucket (grains no wider than the bucket, all UTC-aligned), and raw usage rows for
 * the ragged edges shorter than 10 minutes. Adjacent pieces of one grain are merged.
 */
export function planPieces(start: number, end: number, width: BucketWidth): Piece[] {
  const grains = GRAIN_SECONDS.filter(([, seconds]) => seconds <= BUCKET_WIDTHS[width]);
  const pieces: Piece[] = [];
  const push = (grain: Grain, from: number, to: number) => {
    const last = pieces[pieces.length - 1];
    if (last && last.grain === grain && last.to === from) last.to = to;
    else pieces.push({ grain, from, to });
  };
  let t = start;
  while (t < end) {
    const fit = grains.find(([, seconds]) => t % seconds === 0 && t + seconds <= end);
    if (fit) {
      push(fit[0], t, t + fit[1]);
      t += fit[1];
    } else {
      const next = Math.min(end, (Math.floor(t / 600) + 1) * 600);
      push('raw', t, next);
      t = next;
    }
  }
  return pieces;
}

/** Bucket boundaries: UTC-aligned to the width, the first and last clipped to the window. */
export function bucketBounds(query: Pick<AnalyticsQuery, 'start' | 'end' | 'width'>): { origin: number; bounds: [number, number][] } {
  const w = BUCKET_WIDTHS[query.width];
  const origin = Math.floor(query.start / w) * w;
  const bounds: [number, number][] = [];
  for (let s = origin; s < query.end; s += w) bounds.push([Math.max(s, query.start), Math.min(s + w, query.end)]);
  return { origin, bounds };
}

/** One aggregated row as the store returns it: the bucket index, the grouped dimensions, sums. */
export interface AggregateRow {
  bucket: number;
  dims: Partial<Record<Dimension, string>>;
  credits_nano: bigint;
  request_count: bigint;
}

export type UsageRowOut = Partial<Record<Dimension, string>> & { credits_nano: number; request_count: number };
export interface AnalyticsResponse {
  project_id: string;
  bucket_width: BucketWidth;
  start_time: string;
  end_time: string;
  group_by: Dimension[];
  totals: { credits_nano: number; request_count: number; models: UsageRowOut[] };
  buckets: { start_time: string; end_time: string; credits_nano: number; request_count: number; models: UsageRowOut[] }[];
}

/** Credits descending, then each dimension ascending in the spec's order (code-point order, locale-free). */
export function compareRows(a: UsageRowOut, b: UsageRowOut): number {
  if (a.credits_nano !== b.credits_nano) return b.credits_nano > a.credits_nano ? 1 : -1;
  for (const d of GROUP_BY_DIMENSIONS) {
    const x = a[d] ?? '';
    const y = b[d] ?? '';
    if (x !== y) return byCodePoint(x, y);
  }
  return 0;
}

/** Code-point order, as documented. (`<` compares UTF-16 units: U+1F600 before U+FF21; UTF-8 bytes sort as code points do.) */
const byCodePoint = (x: string, y: string): number => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const keyOf = (dims: Partial<Record<Dimension, string>>, groupBy: Dimension[]) => JSON.stringify(groupBy.map((d) => dims[d]));

/** Builds the response: every bucket (empty ones too), per-bucket rows and window totals, sorted. */
export function buildResponse(query: AnalyticsQuery, rows: AggregateRow[]): AnalyticsResponse {
  const { bounds } = bucketBounds(query);
  const perBucket = bounds.map(() => new Map<string, { dims: AggregateRow['dims']; credits: bigint; count: bigint }>());
  const totals = new Map<string, { dims: AggregateRow['dims']; credits: bigint; count: bigint }>();
  const add = (map: typeof totals, row: AggregateRow) => {
    const key = keyOf(row.dims, query.groupBy);
    const entry = map.get(key) ?? { dims: row.dims, credits: 0n, count: 0n };
    entry.credits += row.credits_nano;
    entry.count += row.request_count;
    map.set(key, entry);
  };
  for (const row of rows) {
    const bucket = perBucket[row.bucket];
    if (!bucket) throw new Error(`usage row outside the window (bucket ${row.bucket})`);
    add(bucket, row);
    add(totals, row);
  }
  const present = (map: typeof totals): UsageRowOut[] =>
    [...map.values()]
      .map((e) => ({ ...pick(e.dims, query.groupBy), credits_nano: Number(e.credits), request_count: Number(e.count) }))
      .sort(compareRows);
  // Sums stay exact (bigint) and become numbers once, not by adding rounded row values.
  const sum = (map: typeof totals) => {
    let credits = 0n;
    let count = 0n;
    for (const e of map.values()) {
      credits += e.credits;
      count += e.count;
    }
    return { credits_nano: Number(credits), request_count: Number(count) };
  };
  return {
    project_id: query.projectId,
    bucket_width: query.width,
    start_time: iso(query.start),
    end_time: iso(query.end),
    group_by: query.groupBy,
    totals: { ...sum(totals), models: present(totals) },
    buckets: bounds.map(([from, to], i) => ({ start_time: iso(from), end_time: iso(to), ...sum(perBucket[i]!), models: present(perBucket[i]!) })),
  };
}

function pick(dims: AggregateRow['dims'], groupBy: Dimension[]): Partial<Record<Dimension, string>> {
  const out: Partial<Record<Dimension, string>> = {};
  for (const d of groupBy) out[d] = dims[d] ?? '';
  return out;
}
