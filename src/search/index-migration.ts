import type { estypes } from '@elastic/elasticsearch';
import type { SearchClient } from './client';
import { isLegacyKbMapping, kbAlias, kbIndexDefinition, kbIndexName, type KbIndexOptions } from './index-setup';

const BATCH = 500;

export type KbMigrationResult =
  | { migrated: false; index: string; reason: 'already current' }
  | { migrated: true; from: string; to: string; documents: number; old_index_left?: string };

export interface KbMigrationOptions extends KbIndexOptions {
  /** Start over when the target index exists (a run that was killed before it could clean up). */
  restart?: boolean;
  /** Aborting stops the copy and undoes it (the old index serves again, writes unblocked). */
  signal?: AbortSignal;
}

/**
 * Moves the knowledge base from a v1 index (a mapped field per metadata key) to the current
 * one: creates it, copies every document with its routing, id and vector (vectors are not in
 * `_source`; they are read from doc values), then swaps the alias in one atomic step and
 * deletes the old index. Writes to the old index are blocked while it is copied, so nothing
 * written meanwhile can be lost: indexing and deleting answer 503 (retryable) until the swap.
 * On failure or abort before the swap the old index is unblocked and the partial copy deleted.
 * A target index that already exists means another run is under way, or one was killed before
 * it could clean up: refused unless `restart`.
 */
export async function migrateKbIndex(client: SearchClient, options: KbMigrationOptions, progress: (line: string) => void = () => undefined): Promise<KbMigrationResult> {
  const alias = kbAlias(options.prefix);
  const mappings = await client.indices.getMapping({ index: alias });
  const [from, second] = Object.keys(mappings);
  if (!from) throw new Error(`no index behind ${alias}`);
  if (second) throw new Error(`${alias} points at more than one index: ${Object.keys(mappings).join(', ')}`);
  if (!isLegacyKbMapping(mappings[from]!.mappings)) return { migrated: false, index: from, reason: 'already current' };
  const to = kbIndexName(options.prefix);
  if (from === to) throw new Error(`${from} has an old mapping under the current name; reindex it by hand`);
  if (!options.restart && (await client.indices.exists({ index: to }))) {
    throw new Error(`${to} already exists: another migration is running, or one was stopped before it could clean up (then run again with --restart)`);
  }

  await client.indices.putSettings({ index: from, settings: { 'index.blocks.write': true } });
  let swapped = false;
  let copied = 0;
  try {
    // Writes that landed just before the block are not yet visible to a search: make them so,
    // or the copy would miss them.
    await client.indices.refresh({ index: from });
    await client.indices.delete({ index: to, ignore_unavailable: true });
    await client.indices.create(kbIndexDefinition(options));
    const total = (await client.count({ index: from })).count;
    progress(`copying ${total} documents from ${from} to ${to}`);
    for await (const hits of readAll(client, from)) {
      options.signal?.throwIfAborted();
      const operations = hits.flatMap((hit) => {
        const vector = hit.fields?.embedding as number[][] | number[] | undefined;
        const embedding = Array.isArray(vector?.[0]) ? (vector![0] as number[]) : (vector as number[] | undefined);
        return [{ index: { _index: to, _id: hit._id, ...(hit._routing ? { routing: hit._routing } : {}) } }, { ...hit._source!, ...(embedding?.length ? { embedding } : {}) }];
      });
      const response = await client.bulk({ operations });
      if (response.errors) {
        const failure = response.items.find((item) => item.index?.error)?.index?.error;
        throw new Error(`copying into ${to} failed: ${failure?.type}: ${failure?.reason}`);
      }
      copied += hits.length;
      progress(`${copied}/${total}`);
    }
    await client.indices.refresh({ index: to });
    const landed = (await client.count({ index: to })).count;
    if (landed !== total) throw new Error(`${to} holds ${landed} documents, ${from} ${total}`);
    options.signal?.throwIfAborted();
    await client.indices.updateAliases({ actions: [{ remove: { index: from, alias } }, { add: { index: to, alias, is_write_index: true } }] });
    swapped = true;
  } catch (error) {
    // The swap may have been applied with its answer lost (a timeout, then a retry that found
    // nothing to remove): then the new index is the live one and must stay.
    swapped = await client.indices.existsAlias({ name: alias, index: to }).catch(() => false);
    if (!swapped) {
      await client.indices.delete({ index: to, ignore_unavailable: true }).catch(() => undefined);
      await client.indices.putSettings({ index: from, settings: { 'index.blocks.write': false } }).catch(() => undefined);
      throw error;
    }
  }
  progress(`${alias} now points at ${to}; deleting ${from}`);
  try {
    await client.indices.delete({ index: from });
    return { migrated: true, from, to, documents: copied };
  } catch (error) {
    // Migrated all the same: the old index only takes space now.
    progress(`could not delete ${from} (${(error as Error).message}); delete it by hand`);
    return { migrated: true, from, to, documents: copied, old_index_left: from };
  }
}

/** Every document of an index in batches, through a point in time (a stable snapshot). */
async function* readAll(client: SearchClient, index: string): AsyncGenerator<Array<estypes.SearchHit<Record<string, unknown>>>> {
  const pit = await client.openPointInTime({ index, keep_alive: '2m' });
  try {
    let after: estypes.SortResults | undefined;
    for (;;) {
      const page = await client.search<Record<string, unknown>>({
        size: BATCH,
        pit: { id: pit.id, keep_alive: '2m' },
        sort: [{ _shard_doc: 'asc' }],
        docvalue_fields: ['embedding'],
        ...(after ? { search_after: after } : {}),
      });
      const hits = page.hits.hits;
      if (hits.length === 0) return;
      yield hits;
      after = hits.at(-1)!.sort;
    }
  } finally {
    await client.closePointInTime({ id: pit.id }).catch(() => undefined);
  }
}
