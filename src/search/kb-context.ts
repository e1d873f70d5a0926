import type { Deps } from '../deps';
import type { Embedder } from './embeddings/embedder';
import { createEmbedder } from './embeddings/create-embedder';
import { ensureKbIndex } from './index-setup';

/** What the knowledge-base functions need besides Deps: the index alias and the embedder. */
export interface KbContext {
  alias: string;
  embedder: Embedder | null;
}

// Built once per Deps (per process): the embedder loads its model once and its
// keyword-only notice is logged once. A failed index check is not cached, so a
// request after Elasticsearch comes back succeeds.
const embedders = new WeakMap<Deps, Promise<Embedder | null>>();
const indexes = new WeakMap<Deps, Promise<string>>();

export async function kbEmbedder(deps: Deps): Promise<Embedder | null> {
  const cached = embedders.get(deps);
  // A local model whose worker died is loaded again (its calls would all fail), once: the
  // first caller to see it replaces it; the others take that replacement.
  if (cached && (await cached)?.usable !== false) return cached;
  if (cached && embedders.get(deps) !== cached) return kbEmbedder(deps);
  if (cached) deps.logger.warn('embedding model worker died; loading the model again');
  const embedder = createEmbedder(deps.config, deps.logger);
  embedders.set(deps, embedder);
  return embedder;
}

export async function kbContext(deps: Deps): Promise<KbContext> {
  let alias = indexes.get(deps);
  if (!alias) {
    alias = ensureKbIndex(deps.search, {
      prefix: deps.config.ELASTICSEARCH_INDEX_PREFIX,
      shards: deps.config.ELASTICSEARCH_KB_SHARDS,
      replicas: deps.config.ELASTICSEARCH_KB_REPLICAS,
      onUpgradeFailed: (error) => deps.logger.warn({ err: error }, 'knowledge-base mapping upgrade failed; searches go on with the current mapping'),
      onLegacyIndex: (index) => deps.logger.warn({ index }, 'knowledge-base index of an earlier release (a mapped field per metadata key); run `npm run -s admin -- kb migrate-index`'),
    });
    indexes.set(deps, alias);
    alias.catch(() => indexes.delete(deps));
  }
  return { alias: await alias, embedder: await kbEmbedder(deps) };
}

/** Releases the embedder's native resources (tests and shutdown). */
export async function closeKbContext(deps: Deps): Promise<void> {
  const embedder = await embedders.get(deps);
  embedders.delete(deps);
  await embedder?.close?.();
}
