import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LocalOnnxEmbedder } from '../../../src/search/embeddings/local-onnx-embedder';
import { defaultModelDir, LOCAL_MODEL } from '../../../src/search/embeddings/local-model-files';
import { OpenAiCompatibleEmbedder } from '../../../src/search/embeddings/openai-compatible-embedder';
import { startApi } from '../../support/harness';
import { ensureLocalModel, ids, kbClient, tenantWithClient } from './kb-client';

let local: LocalOnnxEmbedder;
beforeAll(async () => {
  await ensureLocalModel();
  local = await LocalOnnxEmbedder.load(process.env.EMBEDDINGS_MODEL_DIR ?? defaultModelDir());
});
afterAll(async () => {
  await local.close();
});

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

describe('local all-MiniLM-L6-v2 (ONNX)', () => {
  test('384-dimensional unit vectors, in input order, batch-independent', async () => {
    const texts = ['short', 'a somewhat longer sentence about cooking pasta', ...Array.from({ length: 20 }, (_, i) => `filler ${i}`)];
    const vectors = await local.embed(texts, 'document');
    expect(vectors).toHaveLength(texts.length);
    for (const v of vectors) {
      expect(v).toHaveLength(LOCAL_MODEL.dimensions);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    const [alone] = await local.embed([texts[1]!], 'query');
    expect(cosine(alone!, vectors[1]!)).toBeCloseTo(1, 4);
  });

  test('meaning, not words: paraphrases are close, unrelated sentences are not', async () => {
    const [food, bread, horse, baby] = await local.embed(
      ['A man is eating food.', 'A man is eating a piece of bread.', 'A man is riding a horse.', 'The girl is carrying a baby.'],
      'document',
    );
    // Reference values of sentence-transformers for this model: 0.755, 0.25, -0.10 (int8 weights shift them slightly).
    expect(cosine(food!, bread!)).toBeGreaterThan(0.7);
    expect(cosine(food!, horse!)).toBeLessThan(0.35);
    expect(cosine(food!, baby!)).toBeLessThan(0.1);
  });

  test('once its worker is gone, every call fails at once (none hangs) and the embedder says it is unusable', async () => {
    const doomed = await LocalOnnxEmbedder.load(process.env.EMBEDDINGS_MODEL_DIR ?? defaultModelDir());
    expect(doomed.usable).toBe(true);
    await doomed.close();
    await expect(doomed.embed(['after the end'], 'query')).rejects.toThrow('embedding worker exited');
    expect(doomed.usable).toBe(false);
  });

  test('texts beyond the 256-token window are truncated, not rejected', async () => {
    const [long] = await local.embed(['word '.repeat(2000)], 'document');
    expect(long).toHaveLength(LOCAL_MODEL.dimensions);
  });
});

describe('OpenAI-compatible endpoint', () => {
  // A real OpenAI-compatible embeddings server on loopback, backed by the local model.
  let server: Server;
  let url: string;
  const seen: { authorization?: string; body: { model: string; input: string[] } }[] = [];
  beforeAll(async () => {
    server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push({ authorization: request.headers.authorization, body });
      if (body.model === 'index-zero') {
        // As some llama.cpp server versions answer: every item says index 0.
        const data = body.input.map(() => ({ object: 'embedding', index: 0, embedding: [1, 0, 0] }));
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
        return;
      }
      if (body.model !== 'all-minilm') {
        response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"model not found"}}');
        return;
      }
      // As OpenAI does: an empty string is not a valid input.
      if (body.input.some((text: string) => text === '')) {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"input cannot be an empty string"}}');
        return;
      }
      const vectors = await local.embed(body.input, 'document');
      // Deliberately out of order and unnormalised: the client must use `index` and normalise.
      const data = vectors.map((embedding, index) => ({ object: 'embedding', index, embedding: embedding.map((x) => x * 3) })).reverse();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/embeddings`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('sends model, input and the key; returns normalised vectors in input order', async () => {
    const remote = OpenAiCompatibleEmbedder.create({ url, model: 'all-minilm', apiKey: 'sk-test' });
    const texts = ['first text', 'second, different text'];
    const vectors = await remote.embed(texts, 'document');
    const expected = await local.embed(texts, 'document');
    expect(cosine(vectors[0]!, expected[0]!)).toBeCloseTo(1, 4);
    expect(cosine(vectors[1]!, expected[1]!)).toBeCloseTo(1, 4);
    expect(seen.at(-1)).toEqual({ authorization: 'Bearer sk-test', body: { model: 'all-minilm', input: texts } });
    expect(remote.model).toBe('openai-compatible:all-minilm');
  });

  test('a document with no text is indexed without an embedding instead of failing its batch', async () => {
    const api = await startApi({ EMBEDDINGS_URL: url, EMBEDDINGS_MODEL: 'all-minilm' });
    try {
      const { kb } = await tenantWithClient(api);
      const collection = await kb.newCollection();
      const response = await kb.bulk(collection, [
        { id: 'blank', content: '' },
        { id: 'words', content: 'a note about the autumn harvest' },
      ]);
      expect(response.status).toBe(200);
      expect(response.body.items.map((item: { status: number }) => item.status)).toEqual([201, 201]);
      const browse = await kb.searchOk(collection, { sort: [{ field: 'created_at' }] });
      expect(ids(browse).sort()).toEqual(['blank', 'words']);
      expect(ids(await kb.searchOk(collection, { query: 'harvest' }))).toContain('words');
    } finally {
      await api.close();
    }
  });

  test('vectors whose indexes do not match the inputs one to one are an error, never documents silently left without a vector', async () => {
    const remote = OpenAiCompatibleEmbedder.create({ url, model: 'index-zero' });
    await expect(remote.embed(['a', 'b', 'c'], 'document')).rejects.toThrow('indexes do not match');
  });

  test('a query vector the index refuses (another size, after the embedding model changed) leaves the search keyword-only, not failed', async () => {
    const indexing = await startApi();
    const searching = await startApi({ EMBEDDINGS_URL: url, EMBEDDINGS_MODEL: 'index-zero' }); // 3-dimensional vectors
    try {
      const { kb, tenant } = await tenantWithClient(indexing);
      const collection = await kb.newCollection();
      await kb.index(collection, [{ id: 'harvest', content: 'a note about the autumn harvest' }, { id: 'other', content: 'nothing related' }]);
      const same = kbClient(searching, tenant.key);
      const found = await same.search(collection, { query: 'autumn harvest', aggregations: [{ name: 'ids', type: 'terms', field: 'uri' }] });
      expect(found.status).toBe(200);
      expect(ids(found.body)).toEqual(['harvest']);
    } finally {
      await searching.close();
      await indexing.close();
    }
  });

  test('an error status becomes an error, never a made-up vector', async () => {
    const remote = OpenAiCompatibleEmbedder.create({ url, model: 'other' });
    await expect(remote.embed(['x'], 'query')).rejects.toThrow('404');
  });
});
