import type { AdminExtension } from './admin-extensions';
import { createSearchClient } from '../search/client';
import { migrateKbIndex } from '../search/index-migration';

/** Admin commands for the knowledge base's Elasticsearch index. */
export const KB_COMMANDS: AdminExtension[] = [
  {
    command: 'kb migrate-index',
    usage: 'kb migrate-index   (moves an index of an earlier release to the current mapping; writes wait until it is done)',
    async run(_db, _flags, config) {
      const client = createSearchClient(config.ELASTICSEARCH_URL);
      try {
        return await migrateKbIndex(
          client,
          { prefix: config.ELASTICSEARCH_INDEX_PREFIX, shards: config.ELASTICSEARCH_KB_SHARDS, replicas: config.ELASTICSEARCH_KB_REPLICAS },
          (line) => process.stderr.write(`${line}\n`),
        );
      } finally {
        await client.close();
      }
    },
  },
];
