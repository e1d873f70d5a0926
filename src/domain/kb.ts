import { z } from 'zod';
import { codePoints, isPlainObject, utf8Bytes } from './fields';

/**
 * Knowledge base: request schemas, limits and the filter/ceiling types shared by the
 * HTTP routes, the search layer and the agent-grounding functions. No I/O here.
 */

export const KB_LIMITS = {
  collectionNameChars: 255,
  collectionDescriptionChars: 65_536,
  collectionMetadataBytes: 64 * 1024,
  bulkDocuments: 100,
  documentIdBytes: 256,
  titleChars: 1024,
  typeChars: 255,
  uriChars: 2048,
  metadataKeys: 64,
  metadataValues: 100,
  metadataValueChars: 1024,
  queryChars: 1000,
  filterValues: 100,
  // The longest value a document can hold in a filterable field (uri); a longer one matches nothing.
  filterValueChars: 2048,
  sortFields: 5,
  aggregations: 20,
  termsSizeDefault: 10,
  termsSizeMax: 1000,
  topNDefault: 10,
  topNMax: 50,
  listPageDefault: 20,
  listPageMax: 100,
} as const;

/** ISO 639-1 two-letter language codes. */
export const ISO_639_1 = new Set(
  ('aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo ' +
    'es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ' +
    'ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn ' +
    'no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta ' +
    'te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu').split(' '),
);

// C0 and C1 control characters, DEL included.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * RFC 3339 text in UTC with milliseconds. Digits past the millisecond are dropped before
 * parsing: V8 misreads long fractions (`.0009999999` as 9 ms).
 */
const parseMillis = (value: string): number => Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
export const toUtcMillis = (value: string): string => new Date(parseMillis(value)).toISOString();

// RFC 3339 (§5.6) lets `T` and `Z` be lower case; they are read as upper case, the form every
// other reader (Date, Elasticsearch) takes. (A leap second, :60, has no such reader and is refused.)
const upperCaseDesignators = (value: unknown) => (typeof value === 'string' ? value.replace(/^(\d{4}-\d{2}-\d{2})t/, '$1T').replace(/z$/, 'Z') : value);
/**
 * RFC 3339 date-time with a time zone (Z or an offset), in the years 0000-9999 once in UTC;
 * kept as sent but for upper-cased `T` and `Z`.
 */
export const rfc3339Text = z.preprocess(upperCaseDesignators, z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time with a time zone' }))
  // Years past 9999 in UTC have no four-digit form (toISOString writes +010000-...). (zod runs
  // this also after the format check failed, so an unparseable value must not throw here.)
  .refine((v) => {
    const time = parseMillis(v);
    return Number.isNaN(time) || /^\d{4}-/.test(new Date(time).toISOString());
  }, 'must fall within the years 0000-9999 in UTC');

/**
 * The same, normalised to UTC with milliseconds: the form documents are stored in, and one
 * Elasticsearch parses (it refuses offsets past ±18:00 and more than nine fraction digits,
 * both valid RFC 3339).
 */
export const rfc3339 = rfc3339Text.transform(toUtcMillis);

// ---------------------------------------------------------------- collections

const collectionName = z
  .string({ error: 'must be a string' })
  .refine((v) => !CONTROL_CHARACTERS.test(v), 'must not contain control characters')
  .transform((v) => v.trim())
  .refine((v) => v.length > 0, 'must not be empty')
  .refine((v) => codePoints(v) <= KB_LIMITS.collectionNameChars, `must be at most ${KB_LIMITS.collectionNameChars} characters`);

/** Any JSON object up to 64 KB serialized; arrays, null and scalars are refused. */
const collectionMetadata = z
  .unknown()
  .refine(isPlainObject, 'must be a JSON object')
  .refine(
    (v) => utf8Bytes(JSON.stringify(v)) <= KB_LIMITS.collectionMetadataBytes,
    `must be at most ${KB_LIMITS.collectionMetadataBytes} bytes serialized`,
  )
  .transform((v) => v as Record<string, unknown>);

export const CollectionCreateSchema = z.strictObject({
  name: collectionName,
  description: z.string().max(KB_LIMITS.collectionDescriptionChars).optional(),
  set_primary: z.boolean().optional(),
  metadata: collectionMetadata.optional(),
  /** Needed only by credentials that reach several projects (site service tokens). */
  project_id: z.string().min(1).max(64).optional(),
});
export type CollectionCreate = z.infer<typeof CollectionCreateSchema>;

export const CollectionUpdateSchema = z
  .strictObject({
    name: collectionName.optional(),
    description: z.string().max(KB_LIMITS.collectionDescriptionChars).nullable().optional(),
    metadata: collectionMetadata.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, 'at least one of name, description, metadata is required');
export type CollectionUpdate = z.infer<typeof CollectionUpdateSchema>;

export const CollectionListQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(KB_LIMITS.listPageMax).default(KB_LIMITS.listPageDefault),
  after: z.string().min(1).max(128).optional(),
  project_id: z.string().min(1).max(64).optional(),
});

// ------------------------------------------------------------------ documents

/** An ISO 639-1 code, any case, kept lower-case (documents, and agents' filter ceilings). */
export const LanguageCodeSchema = z
  .string()
  .transform((v) => v.toLowerCase())
  .refine((v) => ISO_639_1.has(v), 'must be an ISO 639-1 language code');
const language = LanguageCodeSchema;

// The document's canonical URL: it is shown to end users as a citation link
// (`document_uri`), so only http(s) is accepted (a `javascript:` or `data:` link is a script).
const absoluteUri = z
  .string()
  .min(1)
  .max(KB_LIMITS.uriChars)
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'must be an absolute http(s) URL');

/** An object whose keys must match `pattern`; a bad key is reported by name (zod's own message does not say why). */
function keyedRecord<V extends z.ZodType>(pattern: RegExp, keyRule: string, value: V) {
  return z.record(z.string(), value).superRefine((record, ctx) => {
    for (const key of Object.keys(record)) {
      if (!pattern.test(key)) ctx.addIssue({ code: 'custom', path: [key], message: `invalid key '${key}': ${keyRule}` });
    }
  });
}

const METADATA_KEY = /^[A-Za-z0-9_][A-Za-z0-9_:-]{0,127}$/;
const METADATA_KEY_RULE = 'metadata keys are 1-128 characters from A-Z a-z 0-9 _ : - and start with a letter, digit or _';
/** A record keyed by metadata keys, as documents, search filters and agent filter ceilings name them. */
export const metadataKeyed = <V extends z.ZodType>(value: V) => keyedRecord(METADATA_KEY, METADATA_KEY_RULE, value);
/**
 * A metadata filter (a search's, an agent's filter ceiling): every key must match, and a
 * document holds at most KB_LIMITS.metadataKeys keys, so a filter naming more could match
 * nothing; refused, as Elasticsearch would refuse one past its clause limit (16,384).
 */
export const metadataFilter = <V extends z.ZodType>(value: V) =>
  metadataKeyed(value).refine((v) => Object.keys(v as object).length <= KB_LIMITS.metadataKeys, `at most ${KB_LIMITS.metadataKeys} metadata keys (as many as a document holds)`);
// The type first, then each limit with its own message (a union's error would hide which limit failed).
const metadataValue = z.union([z.string(), z.array(z.string())], { error: 'metadata values must be strings or arrays of strings' }).superRefine((value, ctx) => {
  if (Array.isArray(value) && value.length > KB_LIMITS.metadataValues) {
    ctx.addIssue({ code: 'custom', message: `metadata arrays hold at most ${KB_LIMITS.metadataValues} strings` });
  }
  if ((Array.isArray(value) ? value : [value]).some((item) => codePoints(item) > KB_LIMITS.metadataValueChars)) {
    ctx.addIssue({ code: 'custom', message: `metadata strings are at most ${KB_LIMITS.metadataValueChars} characters` });
  }
});

export const DocumentMetadataSchema = keyedRecord(METADATA_KEY, METADATA_KEY_RULE, metadataValue).refine((v) => Object.keys(v).length <= KB_LIMITS.metadataKeys, `at most ${KB_LIMITS.metadataKeys} metadata keys`);

export const DocumentIdSchema = z
  .string()
  .min(1)
  .refine((v) => utf8Bytes(v) <= KB_LIMITS.documentIdBytes, `must be at most ${KB_LIMITS.documentIdBytes} bytes`)
  .refine((v) => !CONTROL_CHARACTERS.test(v), 'must not contain control characters')
  // URL clients collapse these path segments: such a document could never be addressed, and
  // DELETE .../documents/.. would reach the collection itself.
  .refine((v) => v !== '.' && v !== '..', "must not be '.' or '..'");

/**
 * A document id in a path, as it could belong to a stored document: any other segment answers
 * 404 without asking the index (one over the byte limit could overflow its request line). Only
 * these rules: documents stored before the others (`.`, `..`) stay reachable.
 */
export const DocumentPathIdSchema = z
  .string()
  .min(1)
  .regex(/^[^\p{Cc}]+$/u)
  .refine((v) => utf8Bytes(v) <= KB_LIMITS.documentIdBytes);

export const DocumentInputSchema = z.strictObject({
  id: DocumentIdSchema.optional(),
  content: z.string({ error: 'content is required and must be a string' }),
  title: z.string().max(KB_LIMITS.titleChars).optional(),
  type: z.string().min(1).max(KB_LIMITS.typeChars).optional(),
  uri: absoluteUri.optional(),
  language: language.optional(),
  created_at: rfc3339.optional(),
  modified_at: rfc3339.optional(),
  metadata: DocumentMetadataSchema.optional(),
});
export type DocumentInput = z.infer<typeof DocumentInputSchema>;

/** The envelope is checked first; each item is then validated on its own. */
export const BulkRequestSchema = z.strictObject({
  documents: z
    .array(z.unknown(), { error: 'documents must be an array' })
    .min(1, 'documents must not be empty')
    .max(KB_LIMITS.bulkDocuments, `at most ${KB_LIMITS.bulkDocuments} documents per request`),
});

/** A stored document as the api returns it. */
export interface KbDocument {
  id: string;
  content: string;
  title?: string;
  type?: string;
  uri?: string;
  language?: string;
  created_at?: string;
  modified_at?: string;
  metadata?: Record<string, string | string[]>;
}

// -------------------------------------------------------------------- filters

/** A filter value: a stored value can be no longer than this, so a longer one is a mistake. */
const anyFilterValue = z.string().refine((v) => codePoints(v) <= KB_LIMITS.filterValueChars, `filter values are at most ${KB_LIMITS.filterValueChars} characters`);
/** Type, uri and language are never stored empty; a metadata value may be, so a filter may look for it. */
export const filterValue = anyFilterValue.min(1);
export const metadataFilterValue = anyFilterValue;

// (The array's length is checked after the union, whose one message would otherwise hide which rule failed.)
const oneOrManyOf = (value: z.ZodType<string>, empty: string) =>
  z
    .union([value, z.array(value).min(1)], { error: `must be a ${empty}string or a non-empty array of strings` })
    .refine((v) => !Array.isArray(v) || v.length <= KB_LIMITS.filterValues, `at most ${KB_LIMITS.filterValues} values`)
    .transform((v) => (Array.isArray(v) ? v : [v]));
const oneOrMany = oneOrManyOf(filterValue, 'non-empty ');

const dateRange = (bound: z.ZodType<string, unknown>) =>
  z
    .strictObject({ gte: bound.optional(), lte: bound.optional() })
    .refine((r) => !(r.gte && r.lte && parseMillis(r.gte) > parseMillis(r.lte)), 'gte must not be after lte');
/** A search filter's range, normalised to UTC. */
export const DateRangeSchema = dateRange(rfc3339);
/** A stored range (an agent's filter ceiling): kept as sent, normalised when a search uses it. */
export const StoredDateRangeSchema = dateRange(rfc3339Text);
export type DateRange = z.infer<typeof DateRangeSchema>;

export const SearchFiltersSchema = z.strictObject({
  type: oneOrMany.optional(),
  uri: oneOrMany.optional(),
  language: oneOrMany.transform((v) => v.map((x) => x.toLowerCase())).optional(),
  metadata: metadataFilter(oneOrManyOf(metadataFilterValue, '')).optional(),
  created_at: DateRangeSchema.optional(),
  modified_at: DateRangeSchema.optional(),
});
export type SearchFilters = z.infer<typeof SearchFiltersSchema>;

/**
 * The filter ceiling of an agent's `knowledge_base` tool entry. Null or omitted means
 * unconstrained; an empty array admits nothing (fail closed).
 */
export interface FilterCeiling {
  type?: string[] | null;
  uri?: string[] | null;
  language?: string[] | null;
  metadata?: Record<string, string[]> | null;
  created_at?: DateRange | null;
  modified_at?: DateRange | null;
}

// ----------------------------------------------------------- sort, aggregations

export const DATE_FIELDS = ['created_at', 'modified_at'] as const;
export const KEYWORD_FIELDS = ['type', 'uri', 'language', 'title.keyword'] as const;
const METADATA_FIELD = /^metadata\.[A-Za-z0-9_][A-Za-z0-9_:-]{0,127}$/;

export const isDateField = (field: string) => (DATE_FIELDS as readonly string[]).includes(field);
export const isKeywordField = (field: string) => (KEYWORD_FIELDS as readonly string[]).includes(field) || METADATA_FIELD.test(field);

const sortField = z
  .string()
  .refine(
    (f) => isDateField(f) || isKeywordField(f),
    'unknown sort field; use created_at, modified_at, type, uri, language, title.keyword or metadata.<field>',
  );

export const SortSchema = z
  .array(z.strictObject({ field: sortField, order: z.enum(['asc', 'desc']).default('asc') }))
  .min(1)
  .max(KB_LIMITS.sortFields);
export type SortSpec = z.infer<typeof SortSchema>;

/** Calendar units, or fixed intervals such as `90m`, `12h`, `7d`. */
export const CALENDAR_INTERVALS = ['minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
const FIXED_INTERVAL = /^[1-9][0-9]{0,5}(ms|s|m|h|d)$/;

const aggregationFields = {
  type: z.enum(['terms', 'date_histogram', 'min', 'max']),
  field: z.string(),
  size: z.number().int().min(1).max(KB_LIMITS.termsSizeMax).optional(),
  interval: z.string().optional(),
};

function checkAggregation(agg: { type: string; field: string; size?: number; interval?: string }, ctx: z.RefinementCtx): void {
  const fail = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (agg.type === 'terms') {
    if (!isKeywordField(agg.field)) fail('field', 'terms aggregates type, uri, language, title.keyword or metadata.<field>');
  } else if (!isDateField(agg.field)) {
    fail('field', `${agg.type} aggregates a date field: created_at or modified_at`);
  }
  if (agg.size !== undefined && agg.type !== 'terms') fail('size', 'size applies only to terms aggregations');
  if (agg.type === 'date_histogram') {
    if (agg.interval === undefined) fail('interval', 'interval is required for date_histogram');
    else if (!(CALENDAR_INTERVALS as readonly string[]).includes(agg.interval) && !FIXED_INTERVAL.test(agg.interval)) {
      fail('interval', `interval must be one of ${CALENDAR_INTERVALS.join(', ')} or a fixed interval such as 12h or 7d`);
    }
  } else if (agg.interval !== undefined) {
    fail('interval', 'interval applies only to date_histogram aggregations');
  }
}

export const AggregationSchema = z.strictObject(aggregationFields).superRefine(checkAggregation);
export type AggregationSpec = z.infer<typeof AggregationSchema>;

// `__proto__` would set the prototype of the response object keyed by name, not add a key.
const AGGREGATION_NAME = /^(?!__proto__$)[A-Za-z0-9_-]{1,64}$/;
const AGGREGATION_NAME_RULE = 'aggregation names are 1-64 characters from A-Z a-z 0-9 _ - (and not __proto__)';
const tooManyAggregations = `at most ${KB_LIMITS.aggregations} aggregations`;

const NamedAggregationSchema = z.strictObject({ name: z.string().regex(AGGREGATION_NAME, AGGREGATION_NAME_RULE), ...aggregationFields }).superRefine(checkAggregation);

/** The spec's form: an array of `{name, field, type, interval, size}`, names unique. */
const AggregationListSchema = z
  .array(NamedAggregationSchema)
  .max(KB_LIMITS.aggregations, tooManyAggregations)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    for (const [index, agg] of list.entries()) {
      if (seen.has(agg.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `aggregation name '${agg.name}' is used twice` });
      seen.add(agg.name);
    }
  })
  .transform((list): Record<string, AggregationSpec> => Object.fromEntries(list.map(({ name, ...agg }) => [name, agg])));

/** Also accepted: an object keyed by name, the shape the response uses. */
const AggregationMapSchema = keyedRecord(AGGREGATION_NAME, AGGREGATION_NAME_RULE, AggregationSchema).refine(
  (v) => Object.keys(v).length <= KB_LIMITS.aggregations,
  tooManyAggregations,
);

/** Either form becomes a map by name; errors keep the path of the form that was sent. */
const AggregationsSchema = z.unknown().transform((value, ctx): Record<string, AggregationSpec> => {
  const parsed = (Array.isArray(value) ? AggregationListSchema : AggregationMapSchema).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  return z.NEVER;
});

export const SearchRequestSchema = z.strictObject({
  // A blank query is a browse request, the same as no query.
  query: z
    .string()
    .max(KB_LIMITS.queryChars)
    .transform((v) => v.trim())
    .optional()
    .transform((v) => (v ? v : undefined)),
  filters: SearchFiltersSchema.optional(),
  sort: SortSchema.optional(),
  aggregations: AggregationsSchema.optional(),
  top_n: z.number().int().min(1).max(KB_LIMITS.topNMax).default(KB_LIMITS.topNDefault),
});
export type SearchRequest = z.infer<typeof SearchRequestSchema>;

// ------------------------------------------------------------------- results

export interface Citation {
  id: string;
  title?: string;
  uri?: string;
  type?: string;
  snippets?: string[];
  score: number;
}

export type AggregationResult =
  | { buckets: { key: string; doc_count: number }[]; other_doc_count: number }
  | { buckets: { key: string; doc_count: number }[] }
  | { value: string | null };

export interface SearchResult {
  citations: Citation[];
  aggregations?: Record<string, AggregationResult>;
}
