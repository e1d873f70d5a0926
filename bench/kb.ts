/**
 * `npm run bench:kb`: knowledge-base throughput and latency, the api against raw Elasticsearch.
 *
 * 1. Bulk-index N documents of about 1 KB through the api (100 per request, C requests in
 *    flight) and the same documents straight into Elasticsearch with `_bulk` (same batches,
 *    same concurrency, same refresh=wait_for, same routing and source shape).
 * 2. Search p50/p99 through the api and with the equivalent raw Elasticsearch request,
 *    with and without aggregations, interleaved query by query (order alternating).
 * Run keyword-only (no embedder: the api's own overhead) and hybrid (local model: the api
 * also embeds every document and query; the raw side gets precomputed vectors).
 * Options: --docs 10000 --hybrid-docs 2000 --searches 300 --concurrency 4 --skip-hybrid
 * The api runs in this process; its client is node:http with keep-alive (see startApi).
 * Writes bench/results/kb-<time>.json. Needs the local services (npm run services).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { estypes } from '@elastic/elasticsearch';
import { createApp } from '../src/api/app';
import { issueApiKey } from '../src/auth/provisioning';
import { loadConfig, type Config } from '../src/config';
import { closeDeps, createDeps, type Deps } from '../src/deps';
import { createLogger } from '../src/logger';
import { buildAggregations } from '../src/search/aggregations';
import { esDocumentId } from '../src/search/documents';
import { documentEmbeddingText } from '../src/search/embeddings/embedder';
import { filterClauses } from '../src/search/filters';
import { closeKbContext, kbContext, type KbContext } from '../src/search/kb-context';
import { fusionWindow, highlight, HYBRID_MINIMUM_SHOULD_MATCH, lexicalQuery } from '../src/search/search';
import { createAccount, createProject } from '../src/store/accounts';
import { migrate } from '../src/store/migrate';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const DOCS = option('docs', 10_000);
const HYBRID_DOCS = option('hybrid-docs', 2_000);
const SEARCHES = option('searches', 300);
const CONCURRENCY = option('concurrency', 4);
const BATCH = 100;

// ---------------------------------------------------------------- the corpus

/** Deterministic pseudo-random words (mulberry32), so every run indexes the same text. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const WORDS = (
  'search index document query release backup plugin server install update theme privacy account password billing refund ' +
  'delivery order product page post image media gallery comment author editor block widget menu sidebar footer header cache ' +
  'performance security login email newsletter subscription analytics traffic visitor mobile desktop browser network domain ' +
  'hosting database table column migration schema version feature setting option language translation locale region market'
).split(' ');
function makeDocuments(count: number, seed: number) {
  const random = rng(seed);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  return Array.from({ length: count }, (_, i) => {
    let content = '';
    while (content.length < 1000) content += `${pick()} `;
    return {
      id: `doc-${i}`,
      title: `${pick()} ${pick()} ${pick()}`,
      content: content.trim(),
      type: ['post', 'page', 'product'][i % 3]!,
      uri: `https://bench.example/${i}`,
      language: ['en', 'de', 'fr', 'es'][i % 4]!,
      created_at: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString(),
      modified_at: new Date(Date.UTC(2024, 6, 1) + i * 3_600_000).toISOString(),
      metadata: { category: pick(), tags: [pick(), pick()] },
    };
  });
}
type Doc = ReturnType<typeof makeDocuments>[number];

// -------------------------------------------------------------------- harness

async function startApi(overrides: Record<string, string>) {
  const config: Config = loadConfig({ ...process.env, ELASTICSEARCH_INDEX_PREFIX: 'bench-kb', RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn', ...overrides });
  const deps = createDeps(config, createLogger({ level: config.LOG_LEVEL }));
  await migrate(deps.db);
  const server: Server = createServer(createApp(deps).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const account = await createAccount(deps.db, 'bench');
  const project = await createProject(deps.db, account.id, 'bench');
  const { key } = await issueApiKey(deps.db, { projectId: project.id, preset: 'all' });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  // node:http over a keep-alive agent, not fetch: the api runs in this process, so the
  // client's CPU is spent on the same event loop, and fetch costs several times more per
  // request than the Elasticsearch client's own transport does on the raw side.
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const { port } = server.address() as AddressInfo;
  const post = (route: string, body: unknown) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = httpRequest({ agent, host: '127.0.0.1', port, path: route, method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(payload) } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          if ((response.statusCode ?? 500) >= 300) return reject(new Error(`${route}: ${response.statusCode} ${JSON.stringify(json)}`));
          resolve(json);
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await closeKbContext(deps);
    await closeDeps(deps);
  };
  return { deps, post, close };
}

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

const batches = (docs: Doc[]) => Array.from({ length: Math.ceil(docs.length / BATCH) }, (_, i) => docs.slice(i * BATCH, (i + 1) * BATCH));

async function timed(work: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
/**
 * Sequential latencies of two ways to run the same query, interleaved (api, raw, raw, api,
 * ...: the order alternates), so neither side gets the warmer caches or the quieter moment.
 */
async function pairedLatencies(
  runApi: (i: number) => Promise<unknown>,
  runRaw: (i: number) => Promise<unknown>,
): Promise<{ api: { p50: number; p99: number }; raw: { p50: number; p99: number } }> {
  for (let i = 0; i < 30; i++) await Promise.all([runApi(i), runRaw(i)]); // warm-up
  const samples = { api: [] as number[], raw: [] as number[] };
  const measure = async (side: 'api' | 'raw', i: number) => {
    const start = performance.now();
    await (side === 'api' ? runApi(i) : runRaw(i));
    samples[side].push(performance.now() - start);
  };
  for (let i = 0; i < SEARCHES; i++) {
    const [first, second] = i % 2 === 0 ? (['api', 'raw'] as const) : (['raw', 'api'] as const);
    await measure(first, i);
    await measure(second, i);
  }
  const summary = (values: number[]) => {
    values.sort((x, y) => x - y);
    return { p50: percentile(values, 50), p99: percentile(values, 99) };
  };
  return { api: summary(samples.api), raw: summary(samples.raw) };
}

// ------------------------------------------------------------------ the modes

const QUERIES = ['search index', 'backup server', 'privacy account', 'theme update', 'billing refund order', 'mobile browser traffic'];
const AGGREGATIONS = {
  types: { type: 'terms' as const, field: 'type' },
  tags: { type: 'terms' as const, field: 'metadata.tags', size: 5 },
  monthly: { type: 'date_histogram' as const, field: 'created_at', interval: 'month' },
  newest: { type: 'max' as const, field: 'modified_at' },
};

/** The Elasticsearch request(s) the service sends for a query search, built from the same pieces. */
async function rawSearch(deps: Deps, context: KbContext, collectionId: string, query: string, withAggs: boolean, vector?: number[]) {
  const filter = filterClauses(collectionId);
  const aggs = withAggs ? buildAggregations(AGGREGATIONS) : undefined;
  const base = { track_total_hits: false, _source: ['doc_id', 'title', 'uri', 'type'] };
  if (!vector) {
    return deps.search.search({ index: context.alias, routing: collectionId, ...base, size: 10, query: lexicalQuery(query, filter), highlight: highlight(query), ...(aggs ? { aggs } : {}) });
  }
  const window = fusionWindow(10);
  const header = { index: context.alias, routing: collectionId };
  return deps.search.msearch({
    searches: [
      header,
      { ...base, size: window, query: lexicalQuery(query, filter, HYBRID_MINIMUM_SHOULD_MATCH), highlight: highlight(query), ...(aggs ? { aggs } : {}) },
      header,
      {
        ...base,
        size: window,
        knn: { field: 'embedding', query_vector: vector, k: window, num_candidates: Math.max(100, window * 2), similarity: context.embedder!.minSimilarity, filter: { bool: { filter: [...filter, { term: { embedding_model: context.embedder!.model } }] } } },
        highlight: highlight(query),
      },
    ] as estypes.MsearchRequestItem[],
  });
}

async function runMode(mode: 'keyword' | 'hybrid', docs: Doc[]) {
  const api = await startApi(mode === 'keyword' ? { EMBEDDINGS_PROVIDER: 'none' } : {});
  try {
    const context = await kbContext(api.deps);
    if (mode === 'hybrid' && !context.embedder) throw new Error('hybrid mode needs the local model: npx tsx src/search/embeddings/install-local-model.ts');
    const apiCollection = (await api.post('/v1/kb/collections', { name: `bench ${mode} api ${Date.now()}` })).id as string;
    const rawCollection = (await api.post('/v1/kb/collections', { name: `bench ${mode} raw ${Date.now()}` })).id as string;

    // The raw side gets the vectors the api would compute, computed before the clock starts.
    const vectors = context.embedder ? await context.embedder.embed(docs.map((d) => documentEmbeddingText(d)), 'document') : undefined;
    const apiSeconds = await timed(() => pool(batches(docs), CONCURRENCY, async (batch) => {
      const result = await api.post(`/v1/kb/collections/${apiCollection}/documents/bulk`, { documents: batch });
      if (result.errors) throw new Error(`bulk errors: ${JSON.stringify(result).slice(0, 500)}`);
    }));
    const indexedAt = new Date().toISOString();
    const rawSeconds = await timed(() => pool(batches(docs), CONCURRENCY, async (batch) => {
      const operations = batch.flatMap((doc) => {
        const { id, ...rest } = doc;
        const i = Number(id.slice(4));
        const source = { ...rest, collection_id: rawCollection, doc_id: id, indexed_at: indexedAt, ...(vectors ? { embedding: vectors[i], embedding_model: context.embedder!.model } : {}) };
        return [{ index: { _index: context.alias, _id: esDocumentId(rawCollection, id), routing: rawCollection } }, source];
      });
      const response = await api.deps.search.bulk({ operations, refresh: 'wait_for' });
      if (response.errors) throw new Error('raw bulk errors');
    }));

    const search = async (withAggs: boolean) => {
      const queryVectors = context.embedder ? await context.embedder.embed(QUERIES, 'query') : undefined;
      const { api: through, raw } = await pairedLatencies(
        (i) => api.post(`/v1/kb/collections/${apiCollection}/search`, { query: QUERIES[i % QUERIES.length], ...(withAggs ? { aggregations: AGGREGATIONS } : {}) }),
        (i) => rawSearch(api.deps, context, rawCollection, QUERIES[i % QUERIES.length]!, withAggs, queryVectors?.[i % QUERIES.length]),
      );
      return { api: through, raw, overhead_p50_ms: through.p50 - raw.p50 };
    };
    const plain = await search(false);
    const aggregated = await search(true);
    return {
      mode,
      documents: docs.length,
      bulk: { api_docs_per_s: docs.length / apiSeconds, raw_docs_per_s: docs.length / rawSeconds, ratio: rawSeconds / apiSeconds },
      search: plain,
      search_with_aggregations: aggregated,
    };
  } finally {
    await api.close();
  }
}

// ---------------------------------------------------------------------- report

const f = (n: number, digits = 1) => n.toFixed(digits);
async function main() {
  const results = [await runMode('keyword', makeDocuments(DOCS, 1))];
  if (!args.includes('--skip-hybrid')) results.push(await runMode('hybrid', makeDocuments(HYBRID_DOCS, 2)));

  console.log(`\nBulk indexing (${BATCH} docs/request, ${CONCURRENCY} in flight, refresh=wait_for)`);
  console.table(results.map((r) => ({ mode: r.mode, docs: r.documents, 'api docs/s': f(r.bulk.api_docs_per_s, 0), 'raw ES docs/s': f(r.bulk.raw_docs_per_s, 0), 'api/raw': `${f(r.bulk.ratio * 100)}%` })));
  console.log(`Search latency (ms, ${SEARCHES} sequential queries per side, api and raw interleaved, top_n 10)`);
  console.table(results.flatMap((r) => [
    { mode: r.mode, aggregations: 'no', 'api p50': f(r.search.api.p50, 2), 'api p99': f(r.search.api.p99, 2), 'raw p50': f(r.search.raw.p50, 2), 'raw p99': f(r.search.raw.p99, 2), 'overhead p50': f(r.search.overhead_p50_ms, 2) },
    { mode: r.mode, aggregations: 'yes', 'api p50': f(r.search_with_aggregations.api.p50, 2), 'api p99': f(r.search_with_aggregations.api.p99, 2), 'raw p50': f(r.search_with_aggregations.raw.p50, 2), 'raw p99': f(r.search_with_aggregations.raw.p99, 2), 'overhead p50': f(r.search_with_aggregations.overhead_p50_ms, 2) },
  ]));

  const dir = path.join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `kb-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), options: { DOCS, HYBRID_DOCS, SEARCHES, CONCURRENCY, BATCH }, results }, null, 2));
  console.log(`results written to ${path.relative(process.cwd(), file)}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
