/**
 * Worker thread that owns the ONNX Runtime session. Running inference here keeps the
 * api's event loop free while a batch is embedded, and keeps onnxruntime's native
 * typed arrays away from sandboxed module realms (jest's vm), whose Float32Array is a
 * different constructor than the native one.
 * Protocol: {id, batch: token-id rows} → {id, vectors} | {id, error}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

interface Job {
  id: number;
  batch: number[][];
}

const { modelPath, threads, dimensions } = workerData as { modelPath: string; threads: number; dimensions: number };
const sessionReady = ort.InferenceSession.create(modelPath, { intraOpNumThreads: threads, graphOptimizationLevel: 'all' });

/** Mean of the real (unpadded) tokens' last hidden states, then L2-normalised, as sentence-transformers does. */
function pool(data: Float32Array, batch: number[][], width: number): number[][] {
  return batch.map((ids, row) => {
    const pooled = new Float64Array(dimensions);
    for (let t = 0; t < ids.length; t++) {
      const offset = (row * width + t) * dimensions;
      for (let d = 0; d < dimensions; d++) pooled[d]! += data[offset + d]!;
    }
    let norm = 0;
    for (let d = 0; d < dimensions; d++) norm += (pooled[d]! / ids.length) ** 2;
    norm = Math.sqrt(norm) || 1;
    return Array.from(pooled, (x) => x / ids.length / norm);
  });
}

async function run(batch: number[][]): Promise<number[][]> {
  const session = await sessionReady;
  const rows = batch.length;
  const width = Math.max(...batch.map((ids) => ids.length));
  const inputIds = new BigInt64Array(rows * width);
  const mask = new BigInt64Array(rows * width);
  batch.forEach((ids, r) =>
    ids.forEach((id, c) => {
      inputIds[r * width + c] = BigInt(id);
      mask[r * width + c] = 1n;
    }),
  );
  const dims = [rows, width];
  const result = await session.run({
    input_ids: new ort.Tensor('int64', inputIds, dims),
    attention_mask: new ort.Tensor('int64', mask, dims),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(rows * width), dims),
  });
  return pool(result.last_hidden_state!.data as Float32Array, batch, width);
}

parentPort!.on('message', (job: Job) => {
  run(job.batch).then(
    (vectors) => parentPort!.postMessage({ id: job.id, vectors }),
    (error: Error) => parentPort!.postMessage({ id: job.id, error: error.message }),
  );
});
