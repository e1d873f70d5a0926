import Router from '@koa/router';
import { errors } from '@elastic/elasticsearch';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import type { Principal } from '../../auth/principal';
import { projectOf, requireProjectAccess, requireResourceProject } from '../../auth/tenancy';
import {
  BulkRequestSchema,
  CollectionCreateSchema,
  CollectionListQuerySchema,
  CollectionUpdateSchema,
  SearchRequestSchema,
  DocumentPathIdSchema,
} from '../../domain/kb';
import { bulkIndexDocuments, deleteCollectionDocuments, deleteDocument, deleteDocumentIds, getDocument, presentDocument } from '../../search/documents';
import { SearchUnavailableError } from '../../search/errors';
import { kbContext } from '../../search/kb-context';
import { searchDocuments } from '../../search/search';
import {
  deleteCollection,
  findCollectionById,
  insertCollection,
  listCollections,
  setSitePrimaryCollection,
  updateCollection,
  type CollectionPosition,
  type CollectionRow,
} from '../../store/collections';
import { withTransaction } from '../../store/db';
import { newId } from '../../store/ids';
import { badRequest, conflict, notFound, serviceUnavailable } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput, pathIds, ResourceIdSchema } from '../validate';

/** 100 documents of up to ~100 KB each. */
export const BULK_BODY_LIMIT_BYTES = 10 * 1024 * 1024;
/** Optional observability header: logged with the search when the session is the caller's. */
export const SESSION_HEADER = 'x-session-id';

export function presentCollection(row: CollectionRow) {
  return {
    id: row.id,
    type: 'kb_collection' as const,
    project_id: row.project_id,
    name: row.name,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.metadata !== null ? { metadata: row.metadata } : {}),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const encodeCursor = (position: CollectionPosition) => Buffer.from(JSON.stringify([position.createdAtMicros, position.id])).toString('base64url');
function decodeCursor(cursor: string): CollectionPosition {
  try {
    const [createdAtMicros, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof createdAtMicros !== 'string' || !/^-?[0-9]{1,16}$/.test(createdAtMicros) || typeof id !== 'string') throw new Error('bad cursor');
    return { createdAtMicros, id };
  } catch {
    throw badRequest('after: not a cursor returned by this endpoint', 'after');
  }
}

/**
 * Elasticsearch refused a search because its aggregations would create more buckets than
 * search.max_buckets allows: the caller's interval is too fine for the data, so no retry
 * helps. Read from the structured error body (the exception type), never from its text.
 */
function tooManyBuckets(error: unknown): boolean {
  const response = error instanceof SearchUnavailableError ? error.cause : error;
  if (!(response instanceof errors.ResponseError)) return false;
  const isTooMany = (cause: unknown, depth = 0): boolean => {
    if (!cause || typeof cause !== 'object' || depth > 8) return false;
    const { type, caused_by, root_cause } = cause as { type?: unknown; caused_by?: unknown; root_cause?: unknown };
    return type === 'too_many_buckets_exception' || isTooMany(caused_by, depth + 1) || (Array.isArray(root_cause) && root_cause.some((c) => isTooMany(c, depth + 1)));
  };
  return isTooMany((response.body as { error?: unknown } | undefined)?.error);
}

/** The collection named in the path, if the caller may see it; otherwise the same 404 as an absent one. */
async function loadCollection(deps: Deps, principal: Principal, id: string): Promise<CollectionRow> {
  const row = await findCollectionById(deps.db, id);
  await requireResourceProject(deps.db, principal, row?.project_id, 'collection');
  return row!;
}

async function explicitProject(deps: Deps, principal: Principal, explicit: string | undefined): Promise<string> {
  const projectId = projectOf(principal, explicit);
  if (explicit !== undefined) await requireProjectAccess(deps.db, principal, projectId);
  return projectId;
}

/** Logs the search against the caller's session, only when that session is in the caller's project. */
async function noteSession(deps: Deps, ctx: AppContext, projectId: string, collectionId: string): Promise<void> {
  // Optional and only logged: a value that is not a resource id is ignored, not refused.
  const parsed = ResourceIdSchema.safeParse(ctx.get(SESSION_HEADER));
  if (!parsed.success) return;
  const sessionId = parsed.data;
  const { rows } = await deps.db.query('SELECT 1 FROM sessions WHERE id = $1 AND project_id = $2', [sessionId, projectId]);
  if (rows.length > 0) ctx.state.log.info({ session_id: sessionId, collection_id: collectionId }, 'kb search');
}

/**
 * Knowledge-base collections (Postgres) and their documents (Elasticsearch).
 * Each route: rate limit → auth (scope `kb`) → body → handler.
 */
export function kbRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>({ prefix: '/v1/kb/collections' });
  const ids = pathIds({ collectionId: { schema: ResourceIdSchema, what: 'collection' }, documentId: { schema: DocumentPathIdSchema, what: 'document' } });
  const read = [rateLimit(deps), authenticate(deps, { scope: 'kb', access: 'read' }), ids];
  const write = [rateLimit(deps), authenticate(deps, { scope: 'kb', access: 'write' }), ids];
  const body = jsonBody(deps.config.BODY_LIMIT_BYTES);

  // Elasticsearch or the embedder being down is a retryable 503, not a 500.
  router.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (tooManyBuckets(error)) {
        throw badRequest('aggregations: a date_histogram interval creates too many buckets for the matching documents; use a wider interval or narrow the created_at/modified_at filters', 'aggregations');
      }
      if (error instanceof SearchUnavailableError) {
        // Never the client error object itself: its meta carries the request body (document text).
        const cause = error.cause as { name?: string; message?: string; meta?: { statusCode?: number } } | undefined;
        ctx.state.log.warn({ cause: cause?.name, cause_message: cause?.message, es_status: cause?.meta?.statusCode }, error.message);
        throw serviceUnavailable(error.message, 1);
      }
      throw error;
    }
  });

  router.post('/', ...write, body, async (ctx) => {
    const principal = ctx.state.principal!;
    const input = parseInput(CollectionCreateSchema, ctx.request.body);
    const projectId = await explicitProject(deps, principal, input.project_id);
    const row = await withTransaction(deps.db, async (tx) => {
      const inserted = await insertCollection(tx, { id: newId('kbc'), projectId, name: input.name, description: input.description, metadata: input.metadata });
      if ('conflict' in inserted) throw conflict(`a collection named '${input.name}' already exists in this project`);
      if (input.set_primary && principal.method === 'service_token' && principal.clientId) {
        await setSitePrimaryCollection(tx, principal.clientId, projectId, inserted.row.id);
      }
      return inserted.row;
    });
    ctx.status = 201;
    ctx.body = presentCollection(row);
  });

  router.get('/', ...read, async (ctx) => {
    const principal = ctx.state.principal!;
    const query = parseInput(CollectionListQuerySchema, ctx.query, 'query');
    const projectId = await explicitProject(deps, principal, query.project_id);
    const rows = await listCollections(deps.db, projectId, { limit: query.limit + 1, after: query.after ? decodeCursor(query.after) : undefined });
    const page = rows.slice(0, query.limit);
    const hasMore = rows.length > query.limit;
    ctx.body = { data: page.map(presentCollection), has_more: hasMore, ...(hasMore ? { next_cursor: encodeCursor(page.at(-1)!.position) } : {}) };
  });

  router.get('/:collectionId', ...read, async (ctx) => {
    ctx.body = presentCollection(await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!));
  });

  router.patch('/:collectionId', ...write, body, async (ctx) => {
    const collection = await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!);
    const patch = parseInput(CollectionUpdateSchema, ctx.request.body);
    const updated = await updateCollection(deps.db, collection.project_id, collection.id, patch);
    if (!updated) throw notFound('collection');
    if ('conflict' in updated) throw conflict(`a collection named '${patch.name}' already exists in this project`);
    ctx.body = presentCollection(updated.row);
  });

  router.delete('/:collectionId', ...write, async (ctx) => {
    const collection = await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!);
    // Documents first, while the row still exists: if Elasticsearch fails midway the
    // collection is still there to be deleted again. Once the row is gone no new request can
    // reach the collection; a last sweep removes what a bulk request that was past its
    // existence check has made visible meanwhile, and such a request, finding the row gone
    // after indexing, removes its own documents (see the bulk route).
    const context = await kbContext(deps);
    let documents = await deleteCollectionDocuments(deps.search, context, collection.id);
    if (!(await deleteCollection(deps.db, collection.project_id, collection.id))) throw notFound('collection');
    documents += await deleteCollectionDocuments(deps.search, context, collection.id);
    ctx.body = { id: collection.id, type: 'kb_collection', deleted: true, deleted_documents: documents };
  });

  router.post('/:collectionId/documents/bulk', ...write, jsonBody(BULK_BODY_LIMIT_BYTES, { itemsOf: 'documents' }), async (ctx) => {
    const collection = await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!);
    const { documents } = parseInput(BulkRequestSchema, ctx.request.body);
    const context = await kbContext(deps);
    const items = await bulkIndexDocuments(deps.search, context, collection.id, documents);
    // The collection may have been deleted while this request embedded and indexed (its
    // delete could not see documents not yet visible): take them back out, answer as if late.
    if (!(await findCollectionById(deps.db, collection.id))) {
      await deleteDocumentIds(deps.search, context, collection.id, items.flatMap((item) => (item.status < 300 && item.id !== undefined ? [item.id] : [])));
      throw notFound('collection');
    }
    ctx.body = { items, errors: items.some((item) => item.status >= 300) };
  });

  router.get('/:collectionId/documents/:documentId', ...read, async (ctx) => {
    const collection = await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!);
    const stored = await getDocument(deps.search, await kbContext(deps), collection.id, ctx.params.documentId!);
    if (!stored) throw notFound('document');
    ctx.body = { ...presentDocument(stored), collection_id: collection.id };
  });

  router.delete('/:collectionId/documents/:documentId', ...write, async (ctx) => {
    const collection = await loadCollection(deps, ctx.state.principal!, ctx.params.collectionId!);
    if (!(await deleteDocument(deps.search, await kbContext(deps), collection.id, ctx.params.documentId!))) throw notFound('document');
    ctx.body = { id: ctx.params.documentId, deleted: true };
  });

  // Search reads: `kb:read` suffices although it is a POST.
  router.post('/:collectionId/search', ...read, jsonBody(deps.config.BODY_LIMIT_BYTES, { optional: true }), async (ctx) => {
    // The collection check (Postgres) and the search (Elasticsearch) run concurrently, so
    // the check adds no round trip to the latency. This reveals nothing: the search is
    // confined to the collection id of the path by routing and filter, and its result is
    // used only once the check has passed; otherwise the caller gets the same 404 as before.
    const collectionId = ctx.params.collectionId!;
    const collection = loadCollection(deps, ctx.state.principal!, collectionId);
    let request;
    try {
      request = parseInput(SearchRequestSchema, ctx.request.body ?? {});
    } catch (invalid) {
      await collection; // an unknown collection answers 404 before any body error, as it always has
      throw invalid;
    }
    const parsed = request;
    const search = kbContext(deps).then((context) => searchDocuments(deps.search, context, ctx.state.log, { collectionId, request: parsed }));
    search.catch(() => undefined); // when the check fails, the search's own outcome is irrelevant
    const found = await collection;
    const [result] = await Promise.all([
      search,
      // Observability only: a failure here must never change the response.
      noteSession(deps, ctx, found.project_id, found.id).catch(() => undefined),
    ]);
    ctx.body = result;
  });

  return router;
}
