import { randomBytes } from 'node:crypto';
import { createSearchClient } from '../../../src/search/client';
import { migrateKbIndex } from '../../../src/search/index-migration';
import { ensureKbIndex, kbAlias, kbIndexName } from '../../../src/search/index-setup';
import { testConfig } from '../../support/config';

/**
 * An index created by an earlier release (v1: a field per metadata key, keyword limit 1024
 * UTF-16 units, a title analyzer of its own) is brought to the current limits when a process
 * starts, a failed upgrade stops nothing, and `kb migrate-index` moves it to the current mapping.
 */
const config = testConfig();
const client = createSearchClient(config.ELASTICSEARCH_URL);
const prefix = `upgrade-${randomBytes(4).toString('hex')}`;
const legacyIndex = `${prefix}-documents-v1`;
afterAll(async () => {
  await client.indices.delete({ index: `${prefix}-*`, ignore_unavailable: true }).catch(() => undefined);
  await client.close();
});

async function createOldIndex(): Promise<void> {
  await client.indices.create({
    index: legacyIndex,
    mappings: {
      dynamic: 'strict',
      dynamic_templates: [{ metadata_keywords: { path_match: 'metadata.*', mapping: { type: 'keyword', ignore_above: 1024 } } }],
      properties: {
        collection_id: { type: 'keyword' },
        title: { type: 'text', analyzer: 'standard', fields: { keyword: { type: 'keyword', ignore_above: 1024 } } },
        content: { type: 'text' },
        metadata: { type: 'object', dynamic: true, properties: { region: { type: 'keyword', ignore_above: 1024 } } },
        embedding: { type: 'dense_vector', dims: 3, index: true, similarity: 'cosine' },
      },
      _source: { excludes: ['embedding'] },
    },
    aliases: { [kbAlias(prefix)]: { is_write_index: true } },
  });
}

test('an existing index gets the current ignore_above on titles, mapped metadata fields and new ones; its analyzer stays', async () => {
  await createOldIndex();
  const failures: unknown[] = [];
  const legacy: string[] = [];
  await ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onUpgradeFailed: (error) => failures.push(error), onLegacyIndex: (index) => legacy.push(index) });
  expect(failures).toEqual([]);
  expect(legacy).toEqual([legacyIndex]);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const mapping = Object.values(await client.indices.getMapping({ index: kbAlias(prefix) }))[0]!.mappings as any;
  expect(mapping.properties.title).toMatchObject({ analyzer: 'standard', fields: { keyword: { ignore_above: 2048 } } });
  expect(mapping.properties.metadata.properties.region).toMatchObject({ type: 'keyword', ignore_above: 2048 });
  expect(mapping.dynamic_templates[0].metadata_keywords.mapping).toMatchObject({ ignore_above: 2048 });
  // Idempotent: a second process start changes nothing and fails nothing.
  await ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onUpgradeFailed: (error) => failures.push(error) });
  expect(failures).toEqual([]);
});

test('an upgrade the index refuses (a read-only block) is reported, and the index is still usable', async () => {
  await client.indices.delete({ index: legacyIndex });
  await createOldIndex();
  await client.indices.putSettings({ index: legacyIndex, settings: { 'index.blocks.read_only': true } });
  try {
    const failures: unknown[] = [];
    await expect(ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onUpgradeFailed: (error) => failures.push(error) })).resolves.toBe(kbAlias(prefix));
    expect(failures).toHaveLength(1);
  } finally {
    await client.indices.putSettings({ index: legacyIndex, settings: { 'index.blocks.read_only': false } });
  }
});

test('kb migrate-index copies every document with its id, routing and vector, then swaps the alias to the flattened mapping', async () => {
  await client.indices.delete({ index: `${prefix}-*`, ignore_unavailable: true });
  await createOldIndex();
  const documents = Array.from({ length: 1203 }, (_, i) => ({ collection_id: `c${i % 3}`, content: `text ${i}`, metadata: { region: i % 2 ? 'eu' : 'us' }, embedding: [1, i, 0] }));
  await client.bulk({ refresh: true, operations: documents.flatMap((doc, i) => [{ index: { _index: legacyIndex, _id: `d${i}`, routing: doc.collection_id } }, doc]) });
  const lines: string[] = [];

  await expect(migrateKbIndex(client, { prefix, shards: 1, replicas: 0 }, (line) => lines.push(line))).resolves.toEqual({ migrated: true, from: legacyIndex, to: kbIndexName(prefix), documents: 1203 });
  expect(lines[0]).toBe(`copying 1203 documents from ${legacyIndex} to ${kbIndexName(prefix)}`);
  expect(await client.indices.exists({ index: legacyIndex })).toBe(false);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const mapping = Object.values(await client.indices.getMapping({ index: kbAlias(prefix) }))[0]!.mappings as any;
  expect(mapping.properties.metadata.type).toBe('flattened');
  const hit = (await client.search({ index: kbAlias(prefix), routing: 'c2', query: { ids: { values: ['d5'] } }, docvalue_fields: ['embedding'] })).hits.hits[0]!;
  expect(hit._source).toEqual({ collection_id: 'c2', content: 'text 5', metadata: { region: 'eu' } });
  expect(hit.fields?.embedding).toEqual([[1, 5, 0]]);
  const eu = await client.count({ index: kbAlias(prefix), query: { term: { 'metadata.region': 'eu' } } });
  expect(eu.count).toBe(601);
  // A second run finds nothing to do.
  await expect(migrateKbIndex(client, { prefix, shards: 1, replicas: 0 })).resolves.toEqual({ migrated: false, index: kbIndexName(prefix), reason: 'already current' });
});

test('kb migrate-index refuses to start over a target that exists (another run, or a killed one) unless told to restart; an aborted run undoes itself', async () => {
  await client.indices.delete({ index: `${prefix}-*`, ignore_unavailable: true });
  await createOldIndex();
  await client.bulk({ refresh: true, operations: [{ index: { _index: legacyIndex, _id: 'd1', routing: 'c' } }, { collection_id: 'c', content: 'kept' }] });
  await client.indices.create({ index: kbIndexName(prefix) }); // left by a run that was killed
  await expect(migrateKbIndex(client, { prefix, shards: 1, replicas: 0 })).rejects.toThrow('--restart');

  const stop = new AbortController();
  stop.abort(new Error('interrupted'));
  await expect(migrateKbIndex(client, { prefix, shards: 1, replicas: 0, restart: true, signal: stop.signal })).rejects.toThrow('interrupted');
  // Undone: the old index serves and takes writes again, the partial copy is gone.
  expect(await client.indices.exists({ index: kbIndexName(prefix) })).toBe(false);
  await client.index({ index: kbAlias(prefix), id: 'd2', routing: 'c', document: { collection_id: 'c', content: 'written after' } });

  await expect(migrateKbIndex(client, { prefix, shards: 1, replicas: 0, restart: true })).resolves.toMatchObject({ migrated: true, documents: 2 });
});

test('a new index maps metadata as one flattened field, and the old per-key upgrade leaves it alone', async () => {
  await client.indices.delete({ index: `${prefix}-*`, ignore_unavailable: true });
  const legacy: string[] = [];
  await ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onLegacyIndex: (index) => legacy.push(index) });
  await ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onLegacyIndex: (index) => legacy.push(index) });
  expect(legacy).toEqual([]);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const mapping = Object.values(await client.indices.getMapping({ index: kbAlias(prefix) }))[0]!.mappings as any;
  expect(mapping.properties.metadata).toEqual({ type: 'flattened', ignore_above: 2048 });
  expect(mapping.dynamic_templates).toBeUndefined();
});
