import type { Config } from '../../config';
import type { Logger } from '../../logger';
import type { Embedder } from './embedder';
import { defaultModelDir, localModelPresent } from './local-model-files';
import { LocalOnnxEmbedder } from './local-onnx-embedder';
import { OpenAiCompatibleEmbedder } from './openai-compatible-embedder';

type EmbeddingsConfig = Pick<Config, 'EMBEDDINGS_PROVIDER' | 'EMBEDDINGS_URL' | 'EMBEDDINGS_MODEL' | 'EMBEDDINGS_API_KEY' | 'EMBEDDINGS_MODEL_DIR'>;

export function embeddingsProvider(config: EmbeddingsConfig): 'local' | 'openai' | 'none' {
  return config.EMBEDDINGS_PROVIDER ?? (config.EMBEDDINGS_URL ? 'openai' : 'local');
}

/**
 * Builds the configured embedder, or null for keyword-only search. Called once per
 * process (see kb-context.ts), so each reason for keyword-only search is logged once.
 */
export async function createEmbedder(config: EmbeddingsConfig, logger: Logger): Promise<Embedder | null> {
  const provider = embeddingsProvider(config);
  if (provider === 'none') {
    logger.warn({ embeddings: 'none' }, 'knowledge-base search is keyword-only: EMBEDDINGS_PROVIDER=none');
    return null;
  }
  if (provider === 'openai') {
    if (!config.EMBEDDINGS_URL || !config.EMBEDDINGS_MODEL) {
      logger.warn({ embeddings: 'openai' }, 'knowledge-base search is keyword-only: EMBEDDINGS_URL and EMBEDDINGS_MODEL must both be set');
      return null;
    }
    const embedder = OpenAiCompatibleEmbedder.create({ url: config.EMBEDDINGS_URL, model: config.EMBEDDINGS_MODEL, apiKey: config.EMBEDDINGS_API_KEY });
    logger.info({ embeddings: embedder.model }, 'knowledge-base search is hybrid (BM25 + kNN)');
    return embedder;
  }
  const dir = config.EMBEDDINGS_MODEL_DIR ?? defaultModelDir();
  if (!localModelPresent(dir)) {
    logger.warn(
      { embeddings: 'local', dir },
      'knowledge-base search is keyword-only: the local embedding model is not installed; run `npx tsx src/search/embeddings/install-local-model.ts`',
    );
    return null;
  }
  try {
    const embedder = await LocalOnnxEmbedder.load(dir);
    logger.info({ embeddings: embedder.model }, 'knowledge-base search is hybrid (BM25 + kNN)');
    return embedder;
  } catch (error) {
    logger.error({ err: error, dir }, 'knowledge-base search is keyword-only: the local embedding model failed to load');
    return null;
  }
}
