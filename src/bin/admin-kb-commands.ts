import type { AdminExtension } from './admin-extensions';
import { createSearchClient } from '../search/client';
import { migrateKbIndex } from '../search/index-migration';

/** Admin commands for the knowledge base's Elasticsearch index. */
export const KB_COMMANDS: AdminExtension[] = [
  {
    command: 'kb migrate-index',
    usage: 'kb migrate-index [--restart]   (moves an index of an earlier release to the current mapping; writes get 503 until it is done)',
    async run(_db, flags, config) {
      const client = createSearchClient(config.ELASTICSEARCH_URL);
      // Ctrl-C (or a stop) undoes the copy and unblocks the old index rather than leaving it read-only.
      const stop = new AbortController();
      const onSignal = () => stop.abort(new Error('interrupted: the old index serves again, nothing was changed'));
      process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
      try {
        return await migrateKbIndex(
          client,
          {
            prefix: config.ELASTICSEARCH_INDEX_PREFIX,
            shards: config.ELASTICSEARCH_KB_SHARDS,
            replicas: config.ELASTICSEARCH_KB_REPLICAS,
            restart: flags.restart !== undefined,
            signal: stop.signal,
          },
          (line) => process.stderr.write(`${line}\n`),
        );
      } finally {
        process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
        await client.close();
      }
    },
  },
];
