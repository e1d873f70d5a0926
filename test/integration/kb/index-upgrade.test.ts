import { randomBytes } from 'node:crypto';
import { createSearchClient } from '../../../src/search/client';
import { ensureKbIndex, kbAlias, kbIndexName } from '../../../src/search/index-setup';
import { testConfig } from '../../support/config';

/**
 * An index created by an earlier release (keyword limit 1024 UTF-16 units, a title analyzer
 * of its own) is brought to the current limits when a process starts, and a failed upgrade
 * stops nothing.
 */
const config = testConfig();
const client = createSearchClient(config.ELASTICSEARCH_URL);
const prefix = `upgrade-${randomBytes(4).toString('hex')}`;
afterAll(async () => {
  await client.indices.delete({ index: `${prefix}-*`, ignore_unavailable: true }).catch(() => undefined);
  await client.close();
});

async function createOldIndex(): Promise<void> {
  await client.indices.create({
    index: kbIndexName(prefix),
    mappings: {
      dynamic: 'strict',
      dynamic_templates: [{ metadata_keywords: { path_match: 'metadata.*', mapping: { type: 'keyword', ignore_above: 1024 } } }],
      properties: {
        collection_id: { type: 'keyword' },
        title: { type: 'text', analyzer: 'standard', fields: { keyword: { type: 'keyword', ignore_above: 1024 } } },
        metadata: { type: 'object', dynamic: true, properties: { region: { type: 'keyword', ignore_above: 1024 } } },
      },
    },
    aliases: { [kbAlias(prefix)]: { is_write_index: true } },
  });
}

test('an existing index gets the current ignore_above on titles, mapped metadata fields and new ones; its analyzer stays', async () => {
  await createOldIndex();
  const failures: unknown[] = [];
  await ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onUpgradeFailed: (error) => failures.push(error) });
  expect(failures).toEqual([]);
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
  await client.indices.delete({ index: kbIndexName(prefix) });
  await createOldIndex();
  await client.indices.putSettings({ index: kbIndexName(prefix), settings: { 'index.blocks.read_only': true } });
  try {
    const failures: unknown[] = [];
    await expect(ensureKbIndex(client, { prefix, shards: 1, replicas: 0, onUpgradeFailed: (error) => failures.push(error) })).resolves.toBe(kbAlias(prefix));
    expect(failures).toHaveLength(1);
  } finally {
    await client.indices.putSettings({ index: kbIndexName(prefix), settings: { 'index.blocks.read_only': false } });
  }
});
