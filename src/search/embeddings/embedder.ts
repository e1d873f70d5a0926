/**
 * A sentence-embedding model. Implementations are real models only (a provider's
 * embeddings endpoint or a local ONNX model); vectors are L2-normalised so the index
 * can use cosine similarity whatever the source.
 */
export interface Embedder {
  /** Identifies the vector space; stored with each document so kNN never mixes models. */
  readonly model: string;
  /**
   * Cosine similarity below which a kNN neighbour is not a match. kNN always finds k
   * neighbours, however unrelated; the floor keeps those out of the fused ranking.
   */
  readonly minSimilarity: number;
  /** One vector per text, in order. */
  embed(texts: string[], purpose: 'document' | 'query'): Promise<number[][]>;
  /** False when the embedder can never answer again (a local model's worker died). */
  readonly usable?: boolean;
  close?(): Promise<void>;
}

export function normalize(vector: ArrayLike<number>): number[] {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  const norm = Math.sqrt(sum) || 1;
  return Array.from(vector, (x) => x / norm);
}

/** The text a document is embedded from: title and the beginning of the content. */
export function documentEmbeddingText(document: { title?: string; content: string }, maxChars = 4000): string {
  const text = document.title ? `${document.title}\n\n${document.content}` : document.content;
  return text.length > maxChars ? text.slice(0, maxChars) : text;
}
