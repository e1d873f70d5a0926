import type { Queryable } from './db';
import { BUCKET_WIDTHS, bucketBounds, planPieces, type AggregateRow, type AnalyticsQuery, type Dimension } from '../domain/analytics';

const rollup = (table: string) => ({ table, time: 'bucket_start', count: 'request_count' });
const RAW = { table: 'usage_records', time: 'created_at', count: '1' };
/** All-dimension rollups, and the narrow model/operation set for unfiltered model/operation queries. */
const FULL = { raw: RAW, '10m': rollup('usage_rollup_10m'), '1h': rollup('usage_rollup_1h'), '1d': rollup('usage_rollup_1d') };
const MODEL_OPERATION = { raw: RAW, '10m': rollup('usage_rollup_mo_10m'), '1h': rollup('usage_rollup_mo_1h'), '1d': rollup('usage_rollup_mo_1d') };

function sourcesFor(query: AnalyticsQuery) {
  const narrow = Object.keys(query.filters).length === 0 && query.groupBy.every((d) => d === 'model' || d === 'operation');
  return narrow ? MODEL_OPERATION : FULL;
}

/**
 * Sums credits and requests per bucket and group over the window. Each piece of the plan
 * (see planPieces) reads one rollup grain, or the raw rows for edges shorter than 10
 * minutes, through the (project_id, time) index; the bucket index of a row is computed
 * from its time, which is exact because every piece lies inside one bucket.
 * Dimension names come from a fixed list, never from the caller's text.
 */
export async function aggregateUsage(db: Queryable, query: AnalyticsQuery): Promise<AggregateRow[]> {
  const { origin } = bucketBounds(query);
  const params: unknown[] = [query.projectId, origin, BUCKET_WIDTHS[query.width]];
  const param = (value: unknown) => `$${params.push(value)}`;
  const filters = Object.entries(query.filters).map(([column, value]) => `AND ${column} = ${param(value)}`).join(' ');
  const dims = query.groupBy.join(', ');
  const sources = sourcesFor(query);

  const branches = planPieces(query.start, query.end, query.width).map((piece) => {
    const source = sources[piece.grain];
    return `SELECT ${dims}, ${source.time} AS t, credits_nano, ${source.count} AS request_count FROM ${source.table}
             WHERE project_id = $1 AND ${source.time} >= ${param(new Date(piece.from * 1000))} AND ${source.time} < ${param(new Date(piece.to * 1000))} ${filters}`;
  });
  const sql = `SELECT floor((extract(epoch FROM t) - $2) / $3)::int AS bucket, ${dims},
                      sum(credits_nano)::text AS credits_nano, sum(request_count)::text AS request_count
                 FROM (${branches.join('\n UNION ALL \n')}) AS pieces
                GROUP BY 1, ${dims}`;
  const { rows } = await db.query<Record<string, string | number>>(sql, params);
  return rows.map((row) => ({
    bucket: Number(row.bucket),
    dims: Object.fromEntries(query.groupBy.map((d: Dimension) => [d, String(row[d])])),
    credits_nano: BigInt(row.credits_nano!),
    request_count: BigInt(row.request_count!),
  }));
}
