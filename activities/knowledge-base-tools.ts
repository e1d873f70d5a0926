import type { Deps } from '../src/deps';
import { fetchDocument, searchCollection, type CitationData } from '../src/search/grounding';
import { SearchUnavailableError } from '../src/search/errors';
import { backoffMs, pause } from '../src/backoff';
import type { FilterCeiling } from '../src/domain/kb';
import { toolErrorEnvelope } from '../src/domain/run-tools';
import type { KnowledgeBaseCall, ToolAnswer } from './server-tools';

/** Further attempts at a search Elasticsearch could not serve, 0.5, 1 and 2 s apart. */
const SEARCH_RETRIES = 3;

/**
 * The `<collection_id>_search` and `<collection_id>_fetch` tools of a `knowledge_base` entry, over the
 * grounding functions of src/search. The entry's filter ceiling always applies; the
 * citation data of what was returned rides along (not shown to clients) so the run's
 * answer can cite it.
 */
export function createKnowledgeBaseTool(deps: Deps) {
  return async (call: KnowledgeBaseCall): Promise<ToolAnswer> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await answer(deps, call);
      } catch (error) {
        if (!(error instanceof SearchUnavailableError)) throw error;
        // A blip (a 429, a node restarting) is ridden out; Elasticsearch (or the embedder) still
        // down after that: the model is told, and may try again or answer without it, rather
        // than the run failing as an internal error.
        if (attempt >= SEARCH_RETRIES) return failure('unavailable', 'the knowledge base is unavailable right now; try again shortly', undefined, true);
        await pause(backoffMs(attempt + 1, 2000));
      }
    }
  };
}

/** A knowledge-base tool call's answer (transient search failures thrown). */
async function answer(deps: Deps, call: KnowledgeBaseCall): Promise<ToolAnswer> {
  const collectionId = call.entry.collection_id ?? '';
  const ceiling = (call.entry.filters ?? null) as FilterCeiling | null;
  if (call.kind === 'kb_search') {
    const result = await searchCollection(deps, {
      projectId: call.projectId,
      collectionId,
      query: String(call.input.query ?? ''),
      filters: call.input.filters,
      topN: typeof call.input.top_n === 'number' ? call.input.top_n : undefined,
      ceiling,
    });
    if (result.status === 'not_found') return failure('not_found', 'the knowledge base was not found');
    if (result.status === 'invalid_arguments') return failure('invalid_input', result.message, result.field, true);
    return {
      content: JSON.stringify({
        results: result.results.map((hit) => ({ id: hit.id, title: hit.title, uri: hit.document_uri, type: hit.type, snippets: hit.snippets, score: hit.score })),
      }),
      citations: result.results.map(citation),
    };
  }
  const document = await fetchDocument(deps, { projectId: call.projectId, collectionId, documentId: String(call.input.id ?? ''), ceiling });
  if (document.status === 'not_found') return failure('not_found', 'no such document in this knowledge base');
  const { status: _status, ...rest } = document;
  return { content: JSON.stringify(rest), citations: [citation(document)] };
}

const citation = (data: CitationData) => ({ type: 'knowledge_base', document_uri: data.document_uri, document_title: data.document_title });

const failure = (code: string, message: string, field?: string, retryable = false): ToolAnswer => ({
  content: toolErrorEnvelope(code, message, { field, retryable }),
  is_error: true,
  error_code: code,
});
