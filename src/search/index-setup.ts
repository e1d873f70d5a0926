import type { estypes } from '@elastic/elasticsearch';
import type { SearchClient } from './client';
import { callSearch } from './errors';

/**
 * One index for every collection, behind an alias (so a reindex can swap it without
 * downtime); each document carries `collection_id` and is routed by it, so one
 * collection's documents sit on one shard and every query targets that shard only.
 */
export const kbAlias = (prefix: string) => `${prefix}-documents`;
// v2: metadata is one `flattened` field. v1 mapped every metadata key as a field of its own, so
// one tenant's keys could fill the shared index's field limit for every tenant.
export const kbIndexName = (prefix: string) => `${prefix}-documents-v2`;

// Highlighting refuses texts longer than the index's max_analyzed_offset unless the
// query caps the analysed length itself; this is the cap both use.
export const MAX_ANALYZED_OFFSET = 1_000_000;

// Keyword values longer than this are not indexed (not sortable, filterable or counted).
// Elasticsearch counts UTF-16 units; titles and metadata strings are limited to 1024 code
// points, which is up to 2048 units (an emoji is two).
const KEYWORD_IGNORE_ABOVE = 2048;
const metadataKeyword: estypes.MappingProperty = { type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE };
// All metadata keys of all tenants are one field: `metadata.<key>` still works in term(s)
// queries, sorts and terms aggregations, and no key adds to the index's field count.
const metadataMapping: estypes.MappingProperty = { type: 'flattened', ignore_above: KEYWORD_IGNORE_ABOVE };
const titleMapping: estypes.MappingProperty = { type: 'text', analyzer: 'kb_text', fields: { keyword: { type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE } } };

export const KB_MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: 'strict',
  // Vectors are for kNN only; keeping them out of _source keeps hits small.
  _source: { excludes: ['embedding'] },
  properties: {
    collection_id: { type: 'keyword' },
    doc_id: { type: 'keyword' },
    title: titleMapping,
    content: { type: 'text', analyzer: 'kb_text' },
    type: { type: 'keyword' },
    uri: { type: 'keyword' },
    language: { type: 'keyword' },
    created_at: { type: 'date' },
    modified_at: { type: 'date' },
    indexed_at: { type: 'date' },
    metadata: metadataMapping,
    // dims are set by the first vector; `embedding_model` keeps kNN within one vector space.
    embedding: { type: 'dense_vector', index: true, similarity: 'cosine' },
    embedding_model: { type: 'keyword' },
  },
};

export interface KbIndexOptions {
  prefix: string;
  shards: number;
  replicas: number;
}

/** The current index's settings and mappings, without the alias. */
export function kbIndexDefinition(options: KbIndexOptions): estypes.IndicesCreateRequest {
  return {
    index: kbIndexName(options.prefix),
    settings: {
      number_of_shards: options.shards,
      number_of_replicas: options.replicas,
      'index.highlight.max_analyzed_offset': MAX_ANALYZED_OFFSET,
      // The standard analyzer plus English stop words, so "the" or "at" neither match nor
      // rank. (Stemmers live in the analysis-common module, which a minimal node lacks.)
      analysis: { analyzer: { kb_text: { type: 'standard', stopwords: '_english_' } } },
    },
    mappings: KB_MAPPINGS,
    wait_for_active_shards: 1,
  };
}

/** Whether an index's mapping is v1's: a field per metadata key (see kbIndexName). */
export const isLegacyKbMapping = (mappings: estypes.MappingTypeMapping): boolean => mappings.properties?.metadata?.type !== 'flattened';

/**
 * Creates the index and alias when missing. Concurrent callers are fine: "already exists" is
 * success. An index of an earlier release keeps serving (see `kb migrate-index` in the
 * admin CLI); `onLegacyIndex` is told so.
 */
export async function ensureKbIndex(
  client: SearchClient,
  options: KbIndexOptions & { onUpgradeFailed?: (error: unknown) => void; onLegacyIndex?: (index: string) => void },
): Promise<string> {
  const alias = kbAlias(options.prefix);
  await callSearch(async () => {
    if (await client.indices.existsAlias({ name: alias })) {
      // Best effort: searching and indexing work without it (a blocked index must not stop them).
      await upgradeKbMappings(client, alias, options.onLegacyIndex).catch((error: unknown) => options.onUpgradeFailed?.(error));
      return;
    }
    try {
      await client.indices.create({ ...kbIndexDefinition(options), aliases: { [alias]: { is_write_index: true } } });
    } catch (error) {
      const type = (error as { body?: { error?: { type?: string } } }).body?.error?.type;
      if (type !== 'resource_already_exists_exception') throw error;
    }
    // Another process may have just created it: wait until its primary shards can take writes.
    await client.cluster.health({ index: alias, wait_for_status: options.replicas > 0 ? 'green' : 'yellow', timeout: '30s' });
  });
  return alias;
}

/**
 * Brings a v1 index's updatable mapping settings to the current ones (idempotent):
 * `ignore_above` of titles and of every metadata field mapped so far, and the template for
 * metadata fields to come. Documents indexed earlier keep how they were indexed until
 * they are indexed again.
 */
async function upgradeKbMappings(client: SearchClient, alias: string, onLegacyIndex?: (index: string) => void): Promise<void> {
  const current = await client.indices.getMapping({ index: alias });
  for (const [index, { mappings }] of Object.entries(current)) {
    if (!isLegacyKbMapping(mappings)) continue;
    onLegacyIndex?.(index);
    const metadataFields = (mappings.properties?.metadata as estypes.MappingObjectProperty | undefined)?.properties ?? {};
    const stale = Object.entries(metadataFields).filter(([, field]) => field.type === 'keyword' && (field as estypes.MappingKeywordProperty).ignore_above !== KEYWORD_IGNORE_ABOVE);
    const title = mappings.properties?.title as estypes.MappingTextProperty | undefined;
    const titleKeyword = title?.fields?.keyword as estypes.MappingKeywordProperty | undefined;
    if (stale.length === 0 && titleKeyword?.ignore_above === KEYWORD_IGNORE_ABOVE) continue;
    await client.indices.putMapping({
      index,
      dynamic_templates: [{ metadata_keywords: { path_match: 'metadata.*', mapping: metadataKeyword } }],
      properties: {
        // The title as it is mapped (an older index may use another analyzer), with the new limit.
        title: { ...(title ?? titleMapping), fields: { ...title?.fields, keyword: { ...titleKeyword, type: 'keyword', ignore_above: KEYWORD_IGNORE_ABOVE } } } as estypes.MappingTextProperty,
        metadata: { type: 'object', dynamic: true, properties: Object.fromEntries(stale.map(([name]) => [name, metadataKeyword])) },
      },
    });
  }
}
