import { z } from 'zod';
import { normalize, type Embedder } from './embedder';

const EmbeddingsResponse = z.object({
  data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) })),
});

/**
 * An OpenAI-compatible `POST {url}` embeddings endpoint (OpenAI, vLLM, Ollama, llama.cpp
 * server, ...). `url` is the full embeddings URL, e.g. https://host/v1/embeddings.
 */
export class OpenAiCompatibleEmbedder implements Embedder {
  private constructor(
    private readonly settings: { url: string; model: string; apiKey?: string; fetch: typeof fetch; timeoutMs: number },
  ) {}

  // Unknown model: a conservative floor that only drops clearly unrelated neighbours.
  readonly minSimilarity = 0.2;

  get model(): string {
    return `openai-compatible:${this.settings.model}`;
  }

  // The index learns the vector size from the first vector, so nothing is probed up front.
  static create(settings: { url: string; model: string; apiKey?: string; fetch?: typeof fetch; timeoutMs?: number }): OpenAiCompatibleEmbedder {
    return new OpenAiCompatibleEmbedder({ fetch: globalThis.fetch, timeoutMs: 30_000, ...settings });
  }

  embed(texts: string[], _purpose?: 'document' | 'query'): Promise<number[][]> {
    return this.request(texts);
  }

  private async request(texts: string[]): Promise<number[][]> {
    const response = await this.settings.fetch(this.settings.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: this.settings.model, input: texts }),
      signal: AbortSignal.timeout(this.settings.timeoutMs),
    });
    if (!response.ok) throw new Error(`embeddings endpoint answered ${response.status}`);
    const parsed = EmbeddingsResponse.parse(await response.json());
    // Exactly one vector per input, by index: a server that repeats or skips indexes (some
    // report 0 for every item) would otherwise leave documents silently without a vector.
    const vectors: Array<number[] | undefined> = new Array(texts.length).fill(undefined);
    for (const item of parsed.data) {
      if (item.index < 0 || item.index >= texts.length || vectors[item.index] !== undefined) {
        throw new Error('embeddings endpoint returned vectors whose indexes do not match the inputs');
      }
      vectors[item.index] = normalize(item.embedding);
    }
    if (vectors.some((v) => v === undefined || v.length === 0)) throw new Error('embeddings endpoint returned fewer vectors than inputs');
    return vectors as number[][];
  }
}
