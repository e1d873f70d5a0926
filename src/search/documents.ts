import { randomUUID } from 'node:crypto';
import type { estypes } from '@elastic/elasticsearch';
import { DocumentInputSchema, type DocumentInput, type KbDocument } from '../domain/kb';
import { firstIssue } from '../first-issue';
import { RefusedJsonItem } from '../json-text';
import type { SearchClient } from './client';
import { documentEmbeddingText } from './embeddings/embedder';
import { callSearch, SearchUnavailableError } from './errors';
import type { KbContext } from './kb-context';

/** The stored source of one document (the embedding itself is excluded from _source). */
export interface StoredDocument extends Omit<KbDocument, 'id'> {
  collection_id: string;
  doc_id: string;
  indexed_at: string;
  embedding?: number[];
  embedding_model?: string;
}

// Document ids are unique per collection, Elasticsearch ids per index: the index id is
// both. Collection ids never contain ':' so the split is unambiguous.
export const esDocumentId = (collectionId: string, documentId: string) => `${collectionId}:${documentId}`;

export interface BulkItemResult {
  id?: string;
  status: number;
  /** Every item has one (the spec): what happened to the document, `failed` when nothing did. */
  result: 'created' | 'updated' | 'failed';
  error?: { message: string; type: string; code: number };
}

const itemError = (status: number, type: string, message: string, id?: string): BulkItemResult => ({
  ...(id !== undefined ? { id } : {}),
  status,
  result: 'failed',
  error: { message, type, code: status },
});

function toStored(collectionId: string, documentId: string, input: DocumentInput, indexedAt: string): StoredDocument {
  const stored: StoredDocument = { collection_id: collectionId, doc_id: documentId, content: input.content, indexed_at: indexedAt };
  if (input.title !== undefined) stored.title = input.title;
  if (input.type !== undefined) stored.type = input.type;
  if (input.uri !== undefined) stored.uri = input.uri;
  if (input.language !== undefined) stored.language = input.language;
  if (input.created_at !== undefined) stored.created_at = input.created_at;
  if (input.modified_at !== undefined) stored.modified_at = input.modified_at;
  if (input.metadata !== undefined) stored.metadata = input.metadata;
  return stored;
}

/** Public shape of a stored document. */
export function presentDocument(source: StoredDocument): KbDocument {
  const { doc_id, content, title, type, uri, language, created_at, modified_at, metadata } = source;
  return {
    id: doc_id,
    content,
    ...(title !== undefined ? { title } : {}),
    ...(type !== undefined ? { type } : {}),
    ...(uri !== undefined ? { uri } : {}),
    ...(language !== undefined ? { language } : {}),
    ...(created_at !== undefined ? { created_at } : {}),
    ...(modified_at !== undefined ? { modified_at } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
}

/**
 * Validates and indexes each item independently: a bad item gets its own 400 and the
 * rest are indexed. Supplying `id` makes indexing idempotent (same id replaces the
 * document). Returns once the documents are visible to search (refresh=wait_for).
 */
export async function bulkIndexDocuments(
  client: SearchClient,
  context: KbContext,
  collectionId: string,
  items: unknown[],
): Promise<BulkItemResult[]> {
  const results: BulkItemResult[] = new Array(items.length);
  const valid: { position: number; id: string; input: DocumentInput }[] = [];
  items.forEach((item, position) => {
    if (item instanceof RefusedJsonItem) {
      results[position] = itemError(400, 'invalid_request_error', item.message, item.id);
      return;
    }
    const parsed = DocumentInputSchema.safeParse(item);
    if (!parsed.success) {
      const id = typeof (item as { id?: unknown })?.id === 'string' ? (item as { id: string }).id : undefined;
      results[position] = itemError(400, 'invalid_request_error', firstIssue(parsed.error).text, id);
    } else {
      valid.push({ position, id: parsed.data.id ?? randomUUID(), input: parsed.data });
    }
  });
  if (valid.length === 0) return results;

  // A document with no text at all (empty content, no title) has nothing to embed: it is
  // indexed for filters and browsing only (embedding APIs refuse empty input).
  const vectors = new Map<number, number[]>();
  if (context.embedder) {
    const texts = valid.map((v, i) => ({ i, text: documentEmbeddingText(v.input) })).filter(({ text }) => text.trim() !== '');
    try {
      const embedded = texts.length > 0 ? await context.embedder.embed(texts.map(({ text }) => text), 'document') : [];
      texts.forEach(({ i }, k) => vectors.set(i, embedded[k]!));
    } catch (error) {
      throw new SearchUnavailableError('the embedding model is unavailable; retry after a short delay', { cause: error });
    }
  }

  const indexedAt = new Date().toISOString();
  const operations: estypes.BulkRequest<StoredDocument>['operations'] = [];
  valid.forEach((v, i) => {
    const source = toStored(collectionId, v.id, v.input, indexedAt);
    const vector = vectors.get(i);
    if (vector) {
      source.embedding = vector;
      source.embedding_model = context.embedder!.model;
    }
    operations.push({ index: { _index: context.alias, _id: esDocumentId(collectionId, v.id), routing: collectionId } }, source);
  });
  const response = await callSearch(() => client.bulk({ operations, refresh: 'wait_for' }));
  response.items.forEach((entry, i) => {
    const v = valid[i]!;
    const outcome = entry.index!;
    if (outcome.error || outcome.status >= 300) {
      // A write block (the index being migrated) passes: retryable, like an overloaded node.
      const status = outcome.status === 429 || outcome.status >= 500 || outcome.error?.type === 'cluster_block_exception' ? 503 : 400;
      const reason = outcome.error?.reason ?? 'rejected by the index';
      results[v.position] = itemError(status, status === 503 ? 'service_unavailable' : 'invalid_request_error', `document rejected: ${reason}`, v.id);
    } else {
      results[v.position] = { id: v.id, status: outcome.result === 'created' ? 201 : 200, result: outcome.result === 'created' ? 'created' : 'updated' };
    }
  });
  return results;
}

export async function getDocument(client: SearchClient, context: KbContext, collectionId: string, documentId: string): Promise<StoredDocument | null> {
  const response = await callSearch(() =>
    client.get<StoredDocument>({ index: context.alias, id: esDocumentId(collectionId, documentId), routing: collectionId }, { ignore: [404] }),
  );
  if (!response.found || !response._source || response._source.collection_id !== collectionId) return null;
  return response._source;
}

export async function deleteDocument(client: SearchClient, context: KbContext, collectionId: string, documentId: string): Promise<boolean> {
  const response = await callSearch(() =>
    client.delete(
      { index: context.alias, id: esDocumentId(collectionId, documentId), routing: collectionId, refresh: 'wait_for' },
      { ignore: [404] },
    ),
  );
  return response.result === 'deleted';
}

/**
 * Removes documents by id (those a bulk request indexed into a collection deleted meanwhile).
 * Returns how many were there.
 */
export async function deleteDocumentIds(client: SearchClient, context: KbContext, collectionId: string, documentIds: string[]): Promise<number> {
  if (documentIds.length === 0) return 0;
  const response = await callSearch(() =>
    client.bulk({ operations: documentIds.map((id) => ({ delete: { _index: context.alias, _id: esDocumentId(collectionId, id), routing: collectionId } })), refresh: true }),
  );
  return response.items.filter((item) => item.delete?.result === 'deleted').length;
}

/**
 * Removes every document of a collection: the delete route runs it before and after the row
 * goes (a bulk request past its existence check removes its own documents if it then finds
 * the row gone). Batches of ids are searched and bulk-deleted rather than using
 * _delete_by_query, which lives in the optional reindex module that a minimal
 * Elasticsearch distribution lacks.
 */
export async function deleteCollectionDocuments(client: SearchClient, context: KbContext, collectionId: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    const page = await callSearch(() =>
      client.search({
        index: context.alias,
        routing: collectionId,
        query: { term: { collection_id: collectionId } },
        _source: false,
        size: 1000,
        track_total_hits: false,
      }),
    );
    const hitIds = page.hits.hits.map((hit) => hit._id!);
    if (hitIds.length === 0) return deleted;
    const response = await callSearch(() =>
      client.bulk({ operations: hitIds.map((id) => ({ delete: { _index: context.alias, _id: id, routing: collectionId } })), refresh: true }),
    );
    const removed = response.items.filter((item) => item.delete?.result === 'deleted' || item.delete?.status === 404).length;
    // A round that removes nothing would repeat forever; surface it instead (as 503 when the
    // index refused for a while: blocked for a migration, or overloaded).
    if (removed === 0) {
      const failure = response.items.find((item) => item.delete?.error)?.delete;
      if (failure && (failure.error?.type === 'cluster_block_exception' || failure.status === 429 || failure.status >= 500)) {
        throw new SearchUnavailableError('the knowledge base is unavailable; retry after a short delay');
      }
      throw new Error(`could not delete the documents of collection ${collectionId}`);
    }
    deleted += response.items.filter((item) => item.delete?.result === 'deleted').length;
  }
}
