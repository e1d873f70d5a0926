import type { Deps } from '../deps';
import { KB_LIMITS, SearchFiltersSchema, type FilterCeiling } from '../domain/kb';
import { findCollection } from '../store/collections';
import { firstIssue } from '../first-issue';
import { getDocument, presentDocument, type StoredDocument } from './documents';
import { documentWithinCeiling } from './filters';
import { kbContext } from './kb-context';
import { searchDocuments } from './search';

/**
 * Knowledge-base grounding for agent runs: the functions behind a `knowledge_base` tool
 * entry's search and fetch tools. Both honour the entry's filter ceiling and return the
 * citation data (`document_uri`, `document_title`) the agent's reply cites. A collection
 * that is absent or in another project is `not_found`, like a document outside the ceiling.
 * Transient Elasticsearch failures throw SearchUnavailableError (retryable).
 */

export interface CitationData {
  /** Click-through URL; documents indexed without a `uri` get a stable `kb://` reference. */
  document_uri: string;
  document_title: string;
}

export interface GroundingHit extends CitationData {
  id: string;
  title?: string;
  uri?: string;
  type?: string;
  snippets: string[];
  score: number;
}

export type GroundingSearchResult =
  | { status: 'ok'; results: GroundingHit[] }
  | { status: 'not_found' }
  | { status: 'invalid_arguments'; message: string; field?: string };

export type GroundingDocument = { status: 'found'; collection_id: string } & ReturnType<typeof presentDocument> & CitationData;
export type GroundingFetchResult = { status: 'not_found' } | GroundingDocument;

function citationData(collectionId: string, doc: { id: string; title?: string; uri?: string }): CitationData {
  return {
    document_uri: doc.uri ?? `kb://${collectionId}/${encodeURIComponent(doc.id)}`,
    document_title: doc.title || doc.uri || doc.id,
  };
}

export async function searchCollection(
  deps: Deps,
  input: { projectId: string; collectionId: string; query: string; filters?: unknown; topN?: number; ceiling?: FilterCeiling | null },
): Promise<GroundingSearchResult> {
  // Filters come from the model's tool call: validate them like an API request would be.
  const filters = SearchFiltersSchema.optional().safeParse(input.filters ?? undefined);
  if (!filters.success) {
    const { path, text } = firstIssue(filters.error);
    return { status: 'invalid_arguments', message: text, field: path ? `filters.${path}` : 'filters' };
  }
  const query = input.query.trim().slice(0, KB_LIMITS.queryChars);
  if (!query) return { status: 'invalid_arguments', message: 'query must not be empty', field: 'query' };
  const collection = await findCollection(deps.db, input.projectId, input.collectionId);
  if (!collection) return { status: 'not_found' };

  const topN = Math.min(KB_LIMITS.topNMax, Math.max(1, Math.trunc(input.topN ?? KB_LIMITS.topNDefault)));
  const context = await kbContext(deps);
  const result = await searchDocuments(deps.search, context, deps.logger, {
    collectionId: collection.id,
    request: { query, filters: filters.data, top_n: topN },
    ceiling: input.ceiling,
  });
  return {
    status: 'ok',
    results: result.citations.map((c) => ({ ...c, snippets: c.snippets ?? [], ...citationData(collection.id, c) })),
  };
}

export async function fetchDocument(
  deps: Deps,
  input: { projectId: string; collectionId: string; documentId: string; ceiling?: FilterCeiling | null },
): Promise<GroundingFetchResult> {
  const collection = await findCollection(deps.db, input.projectId, input.collectionId);
  if (!collection || !input.documentId) return { status: 'not_found' };
  const context = await kbContext(deps);
  const stored: StoredDocument | null = await getDocument(deps.search, context, collection.id, input.documentId);
  if (!stored || !documentWithinCeiling(stored, input.ceiling)) return { status: 'not_found' };
  const document = presentDocument(stored);
  return { status: 'found', collection_id: collection.id, ...document, ...citationData(collection.id, document) };
}
