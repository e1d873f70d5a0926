import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { Tokenizer } from '@huggingface/tokenizers';
import type { Embedder } from './embedder';
import { LOCAL_MODEL } from './local-model-files';

// Texts are embedded in batches padded to the longest member; sorting by length first
// keeps padding (wasted compute) small.
const BATCH_SIZE = 16;

type Pending = { resolve: (vectors: number[][]) => void; reject: (error: Error) => void };

// A job waits behind the others in the worker's queue; one not answered in this time means a
// wedged worker: it is stopped (every job fails, the owner loads a new one), so no request hangs.
const JOB_TIMEOUT_MS = 120_000;

/**
 * all-MiniLM-L6-v2 run in-process by ONNX Runtime: BERT WordPiece tokens (at most 256,
 * the model's sequence limit) here, inference and mean pooling in a worker thread
 * (onnx-worker.ts). Vectors are L2-normalised, as sentence-transformers does.
 */
export class LocalOnnxEmbedder implements Embedder {
  readonly model = LOCAL_MODEL.id;
  readonly minSimilarity = LOCAL_MODEL.minSimilarity;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Why the worker is gone: every later call fails with it at once (see kbEmbedder). */
  private dead: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly tokenizer: Tokenizer,
    private readonly sepId: number,
  ) {
    worker.on('message', (message: { id: number; vectors?: number[][]; error?: string }) => {
      const job = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) job?.reject(new Error(`embedding failed: ${message.error}`));
      else job?.resolve(message.vectors!);
    });
    // A dead worker fails everything in flight, and every later call at once.
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', (code) => this.failAll(new Error(`embedding worker exited with code ${code}`)));
    worker.unref(); // an idle model never keeps the process alive
  }

  static async load(dir: string, options: { threads?: number } = {}): Promise<LocalOnnxEmbedder> {
    const [tokenizerJson, tokenizerConfig] = await Promise.all(
      ['tokenizer.json', 'tokenizer_config.json'].map(async (f) => JSON.parse(await readFile(path.join(dir, f), 'utf8'))),
    );
    const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    const sepId = tokenizer.encode('').ids.at(-1)!; // '' encodes as [CLS] [SEP]
    const workerData = { modelPath: path.join(dir, 'model.onnx'), threads: options.threads ?? 0, dimensions: LOCAL_MODEL.dimensions };
    // Source checkouts run TypeScript: the worker registers tsx's require hook, then loads
    // the .ts file. A compiled build runs the .js file as is.
    const worker = __filename.endsWith('.ts')
      ? new Worker(
          `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(path.join(__dirname, 'onnx-worker.ts'))});`,
          { eval: true, workerData },
        )
      : new Worker(path.join(__dirname, 'onnx-worker.js'), { workerData });
    const embedder = new LocalOnnxEmbedder(worker, tokenizer, sepId);
    await embedder.embed(['warm up']); // surfaces a broken model at start-up, not on the first request
    return embedder;
  }

  private tokenize(text: string): number[] {
    const ids = this.tokenizer.encode(text).ids;
    if (ids.length <= LOCAL_MODEL.maxTokens) return ids;
    return [...ids.slice(0, LOCAL_MODEL.maxTokens - 1), this.sepId];
  }

  // Symmetric model: documents and queries are embedded alike.
  async embed(texts: string[], _purpose?: 'document' | 'query'): Promise<number[][]> {
    const encoded = texts.map((text, index) => ({ index, ids: this.tokenize(text) }));
    encoded.sort((a, b) => a.ids.length - b.ids.length);
    const out: number[][] = new Array(texts.length);
    const batches: Promise<void>[] = [];
    for (let start = 0; start < encoded.length; start += BATCH_SIZE) {
      const batch = encoded.slice(start, start + BATCH_SIZE);
      batches.push(this.run(batch.map((b) => b.ids)).then((vectors) => batch.forEach((b, i) => (out[b.index] = vectors[i]!))));
    }
    await Promise.all(batches);
    return out;
  }

  /** False once the worker has died: the owner should load a new embedder. */
  get usable(): boolean {
    return this.dead === undefined;
  }

  private run(batch: number[][]): Promise<number[][]> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    return new Promise<number[][]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      timer = setTimeout(() => {
        this.failAll(new Error(`embedding took more than ${JOB_TIMEOUT_MS / 1000} s; the model worker was stopped`));
        void this.worker.terminate();
      }, JOB_TIMEOUT_MS);
      this.worker.ref(); // keep the process alive while a job is in flight
      this.worker.postMessage({ id, batch });
    }).finally(() => {
      clearTimeout(timer);
      if (this.pending.size === 0) this.worker.unref();
    });
  }

  private failAll(error: Error): void {
    this.dead ??= error;
    for (const job of this.pending.values()) job.reject(error);
    this.pending.clear();
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
