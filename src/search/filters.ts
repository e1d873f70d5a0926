import type { estypes } from '@elastic/elasticsearch';
import { toUtcMillis, type DateRange, type FilterCeiling, type SearchFilters } from '../domain/kb';
import type { StoredDocument } from './documents';

type Clause = estypes.QueryDslQueryContainer;

/** Accepted values per dimension; null/undefined means unconstrained. Both search filters and ceilings reduce to this. */
type Constraints = FilterCeiling;

// Bounds go out in UTC: ceilings stored before dates were normalised on input may still carry
// offsets Elasticsearch refuses (past ±18:00).
const rangeClause = (field: string, range: DateRange): Clause => ({
  range: { [field]: { ...(range.gte ? { gte: toUtcMillis(range.gte) } : {}), ...(range.lte ? { lte: toUtcMillis(range.lte) } : {}), format: 'strict_date_optional_time' } },
});

// A range with neither bound constrains nothing (as an unbounded range clause it would still
// drop documents without the date).
const bounded = (range: DateRange | null | undefined): range is DateRange => !!range && (range.gte !== undefined || range.lte !== undefined);

// `terms` with an empty list matches nothing, which is what an empty ceiling means.
function constraintClauses(c: Constraints): Clause[] {
  const clauses: Clause[] = [];
  if (c.type) clauses.push({ terms: { type: c.type } });
  if (c.uri) clauses.push({ terms: { uri: c.uri } });
  if (c.language) clauses.push({ terms: { language: c.language.map((l) => l.toLowerCase()) } });
  for (const [key, values] of Object.entries(c.metadata ?? {})) clauses.push({ terms: { [`metadata.${key}`]: values } });
  if (bounded(c.created_at)) clauses.push(rangeClause('created_at', c.created_at));
  if (bounded(c.modified_at)) clauses.push(rangeClause('modified_at', c.modified_at));
  return clauses;
}

/**
 * Filter clauses for one collection: the caller's filters AND the agent's ceiling, so a
 * search can narrow the ceiling but never widen it.
 */
export function filterClauses(collectionId: string, filters?: SearchFilters, ceiling?: FilterCeiling | null): Clause[] {
  return [{ term: { collection_id: collectionId } }, ...constraintClauses(filters ?? {}), ...constraintClauses(ceiling ?? {})];
}

function withinRange(value: string | undefined, range: DateRange | null | undefined): boolean {
  if (!bounded(range)) return true;
  if (value === undefined) return false;
  const t = Date.parse(value);
  return (!range.gte || t >= Date.parse(toUtcMillis(range.gte))) && (!range.lte || t <= Date.parse(toUtcMillis(range.lte)));
}

function within(value: string | string[] | undefined, accepted: string[] | null | undefined, normalize = (v: string) => v): boolean {
  if (!accepted) return true;
  if (value === undefined) return false;
  const allowed = new Set(accepted.map(normalize));
  return (Array.isArray(value) ? value : [value]).some((v) => allowed.has(normalize(v)));
}

/** The same rules as filterClauses, for one fetched document: failing any dimension means not_found. */
export function documentWithinCeiling(document: StoredDocument, ceiling?: FilterCeiling | null): boolean {
  if (!ceiling) return true;
  return (
    within(document.type, ceiling.type) &&
    within(document.uri, ceiling.uri) &&
    within(document.language, ceiling.language, (v) => v.toLowerCase()) &&
    Object.entries(ceiling.metadata ?? {}).every(([key, values]) => within(document.metadata?.[key], values)) &&
    withinRange(document.created_at, ceiling.created_at) &&
    withinRange(document.modified_at, ceiling.modified_at)
  );
}
