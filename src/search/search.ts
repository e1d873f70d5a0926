import type { estypes } from '@elastic/elasticsearch';
import type { Citation, FilterCeiling, SearchRequest, SearchResult } from '../domain/kb';
import type { Logger } from '../logger';
import { buildAggregations, presentAggregations } from './aggregations';
import type { SearchClient } from './client';
import type { StoredDocument } from './documents';
import { callSearch, msearchResult, SearchUnavailableError } from './errors';
import { filterClauses } from './filters';
import { MAX_ANALYZED_OFFSET } from './index-setup';
import type { KbContext } from './kb-context';
import { reciprocalRankFusion } from './rrf';

type Hit = estypes.SearchHit<Pick<StoredDocument, 'doc_id' | 'title' | 'uri' | 'type'>>;
type Request = estypes.SearchRequest;

const SOURCE_FIELDS = ['doc_id', 'title', 'uri', 'type'];
// Title matches count three times a content match.
const TEXT_FIELDS = ['title^3', 'content'];

/** How deep each ranked list goes before fusion: deep enough that a document ranked
 * moderately by both lists can overtake one ranked high by only one. */
export const fusionWindow = (topN: number) => Math.min(100, Math.max(30, topN * 3));

export interface SearchParams {
  collectionId: string;
  request: SearchRequest;
  /** An agent tool entry's filter ceiling; ANDed with request.filters. */
  ceiling?: FilterCeiling | null;
}

// In hybrid search the lexical side must match most of the query's words: otherwise one
// incidental common word ("my", "when") earns a document a top lexical rank, and rank
// fusion lets it outrank the semantic match. Recall for loose wording comes from kNN.
// Keyword-only search keeps plain OR matching, its only source of recall.
export const HYBRID_MINIMUM_SHOULD_MATCH = '2<75%';

/** How many of the query's words a document must hold, given the collection's search (see above). */
const requiredWords = (context: KbContext): string | undefined => (context.embedder ? HYBRID_MINIMUM_SHOULD_MATCH : undefined);

/**
 * BM25 over the title (boosted) and content. Scored field by field (the best field, plus a
 * share of the others); when most of the query's words are required, they are counted over
 * title and content together (`cross_fields`), so "payment guarantee" matches a document
 * titled "Payment" whose content says "guarantee".
 */
export const lexicalQuery = (
  query: string,
  filter: estypes.QueryDslQueryContainer[],
  minimumShouldMatch?: string,
): estypes.QueryDslQueryContainer => ({
  bool: {
    must: [{ multi_match: { query, fields: TEXT_FIELDS, type: 'best_fields', tie_breaker: 0.3 } }],
    filter: minimumShouldMatch
      ? [...filter, { multi_match: { query, fields: TEXT_FIELDS, type: 'cross_fields', operator: 'or', minimum_should_match: minimumShouldMatch } }]
      : filter,
  },
});

// Snippets are content fragments around the query's words, HTML-escaped with <em>
// marking the matches. A hit found only semantically has no matching words; it gets
// the opening of its content instead (no_match_size) so every hit can be quoted.
export const highlight = (query: string): estypes.SearchHighlight => ({
  encoder: 'html',
  max_analyzed_offset: MAX_ANALYZED_OFFSET,
  fields: {
    content: {
      fragment_size: 160,
      number_of_fragments: 3,
      no_match_size: 160,
      highlight_query: { match: { content: query } },
    },
  },
});

function sortClause(request: SearchRequest): estypes.Sort {
  const fields = (request.sort ?? []).map((s) => ({ [s.field]: { order: s.order, missing: '_last' as const, unmapped_type: 'keyword' } }));
  return [...fields, { doc_id: { order: 'asc' } }];
}

function citation(hit: Hit | undefined, id: string, score: number, withSnippets: boolean): Citation {
  const source: Partial<StoredDocument> = hit?._source ?? {};
  return {
    id,
    ...(source.title !== undefined ? { title: source.title } : {}),
    ...(source.uri !== undefined ? { uri: source.uri } : {}),
    ...(source.type !== undefined ? { type: source.type } : {}),
    ...(withSnippets ? { snippets: hit?.highlight?.content ?? [] } : {}),
    score,
  };
}

/**
 * Searches one collection.
 * - query, no sort: hybrid. BM25 (title boosted) and kNN over the embedding run in one
 *   msearch and are fused with reciprocal rank fusion; score is the fused score.
 *   Keyword-only when no embedder is configured (score is then the BM25 score).
 * - query and sort: documents matching the query's words, in field order; score is BM25.
 * - no query: browse by filters (sort, or most recently indexed first); no snippets, score 0.
 * Aggregations count the documents matching the filters (and the query's words, if any).
 */
export async function searchDocuments(client: SearchClient, context: KbContext, logger: Logger, params: SearchParams): Promise<SearchResult> {
  const { request } = params;
  const filter = filterClauses(params.collectionId, request.filters, params.ceiling);
  const aggs = request.aggregations ? buildAggregations(request.aggregations) : undefined;
  const base = { index: context.alias, routing: params.collectionId, track_total_hits: false, _source: SOURCE_FIELDS };
  const finish = (citations: Citation[], raw?: Record<string, estypes.AggregationsAggregate>): SearchResult => ({
    citations,
    ...(request.aggregations ? { aggregations: presentAggregations(request.aggregations, raw) } : {}),
  });

  if (!request.query || request.sort) {
    const body: Request = {
      ...base,
      size: request.top_n,
      // The same documents as the search without sort matches by words (only their order differs).
      query: request.query ? lexicalQuery(request.query, filter, requiredWords(context)) : { bool: { filter } },
      sort: request.sort ? sortClause(request) : [{ indexed_at: { order: 'desc' } }, { doc_id: { order: 'asc' } }],
      ...(request.query ? { track_scores: true, highlight: highlight(request.query) } : {}),
      ...(aggs ? { aggs } : {}),
    };
    const response = await callSearch(() => client.search<Hit['_source']>(body));
    const citations = response.hits.hits.map((hit) => citation(hit as Hit, hit._source!.doc_id, request.query ? (hit._score ?? 0) : 0, !!request.query));
    return finish(citations, response.aggregations);
  }

  const query = request.query;
  const window = fusionWindow(request.top_n);
  const vector = await queryVector(context, logger, query);
  if (!vector) {
    // With an embedder configured (its call failed), this is the hybrid's keyword half alone,
    // matched the same way, so hits and aggregation counts do not depend on its health.
    const lexical: Request = { ...base, size: request.top_n, query: lexicalQuery(query, filter, requiredWords(context)), highlight: highlight(query), ...(aggs ? { aggs } : {}) };
    const response = await callSearch(() => client.search<Hit['_source']>(lexical));
    const citations = response.hits.hits.slice(0, request.top_n).map((hit) => citation(hit as Hit, hit._source!.doc_id, hit._score ?? 0, true));
    return finish(citations, response.aggregations);
  }

  const lexical: Request = {
    ...base,
    size: window,
    query: lexicalQuery(query, filter, HYBRID_MINIMUM_SHOULD_MATCH),
    highlight: highlight(query),
    ...(aggs ? { aggs } : {}),
  };
  const semantic: Request = {
    ...base,
    size: window,
    knn: {
      field: 'embedding',
      query_vector: vector,
      k: window,
      num_candidates: Math.max(100, window * 2),
      similarity: context.embedder!.minSimilarity,
      filter: { bool: { filter: [...filter, { term: { embedding_model: context.embedder!.model } }] } },
    },
    highlight: highlight(query),
  };
  const { responses } = await callSearch(() =>
    client.msearch<Hit['_source']>({
      searches: [
        { index: context.alias, routing: params.collectionId },
        stripIndex(lexical),
        { index: context.alias, routing: params.collectionId },
        stripIndex(semantic),
      ],
    }),
  );
  const lexicalResult = msearchResult(responses[0]!);
  const semanticHits = semanticHalf(responses[1]!, context, logger);
  const lexicalHits = lexicalResult.hits.hits as Hit[];
  const byId = new Map<string, Hit>();
  // Prefer the lexical hit: its highlight shows the matching words.
  for (const hit of [...semanticHits, ...lexicalHits]) byId.set(hit._source!.doc_id, hit);
  const fused = reciprocalRankFusion([lexicalHits.map((h) => h._source!.doc_id), semanticHits.map((h) => h._source!.doc_id)]);
  const citations = fused.slice(0, request.top_n).map((item) => citation(byId.get(item.id), item.id, item.score, true));
  return finish(citations, lexicalResult.aggregations);
}

/**
 * The kNN half's hits. One the index refuses (vectors of another size than the index holds,
 * after the embedding model changed) leaves the search keyword-only, as a failed query
 * embedding does; an unavailable index still fails the search (503).
 */
function semanticHalf(item: estypes.MsearchResponseItem<Hit['_source']>, context: KbContext, logger: Logger): Hit[] {
  try {
    return msearchResult(item).hits.hits as Hit[];
  } catch (error) {
    if (error instanceof SearchUnavailableError) throw error;
    logger.warn({ cause: (error as Error).message, embeddings: context.embedder?.model }, 'the kNN half of a hybrid search failed; this search is keyword-only');
    return [];
  }
}

/** msearch bodies carry index and routing in their header line, not in the body. */
function stripIndex(request: Request): estypes.MsearchMultisearchBody {
  const { index: _index, routing: _routing, ...body } = request as Request & { routing?: string };
  return body as estypes.MsearchMultisearchBody;
}

/** The query's vector, or undefined for keyword-only (no embedder, or it failed: then logged). */
async function queryVector(context: KbContext, logger: Logger, query: string): Promise<number[] | undefined> {
  if (!context.embedder) return undefined;
  try {
    return (await context.embedder.embed([query], 'query'))[0];
  } catch (error) {
    logger.warn({ cause: (error as Error).message, embeddings: context.embedder.model }, 'query embedding failed; this search is keyword-only');
    return undefined;
  }
}
