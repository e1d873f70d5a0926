/**
 * `tsx src/search/embeddings/install-local-model.ts [dir]`: installs the local embedding
 * model's files (see local-model-files.ts). Run by the install scripts; idempotent.
 */
import { defaultModelDir, installLocalModel, localModelPresent } from './local-model-files';

const dir = process.argv[2] ?? process.env.EMBEDDINGS_MODEL_DIR ?? defaultModelDir();
if (localModelPresent(dir)) {
  process.exit(0);
}
installLocalModel(dir, (message) => process.stderr.write(`[embeddings] ${message}\n`)).catch((error: Error) => {
  process.stderr.write(`[embeddings] ERROR: cannot install the local embedding model: ${error.message}\n`);
  process.exit(1);
});
