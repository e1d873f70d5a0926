import { startApi, type TestApi } from '../../support/harness';
import { ensureLocalModel, ids, tenantWithClient, type KbClient } from './kb-client';

/**
 * A small labeled set: for each query the relevant document must rank first, with
 * keyword-only search and with hybrid search. Semantic queries share no word with their
 * document, so only the embedding model can find them: keyword-only must miss them and
 * hybrid must rank them first, which proves vectors are really used.
 */
const CORPUS = [
  { id: 'password-reset', title: 'Resetting your password', content: "If you forgot your password, open the sign-in page and choose 'Forgot password'. We email you a link to choose a new password." },
  { id: 'billing-refund', title: 'Refund policy', content: 'Purchases can be refunded within 30 days. Contact support with your order number to request your money back.' },
  { id: 'shipping-times', title: 'Delivery times', content: 'Orders ship within two business days. Standard delivery takes three to five days; express delivery arrives the next day.' },
  { id: 'api-rate-limits', title: 'API rate limits', content: 'Each API key may send 200 requests per second. Exceeding the limit returns HTTP 429; retry after the delay in the Retry-After header.' },
  { id: 'dark-mode', title: 'Dark mode', content: 'Switch the interface to a dark colour scheme under Settings, Appearance. The theme follows your operating system by default.' },
  { id: 'export-data', title: 'Exporting your data', content: 'Download all your posts, comments and media as a ZIP archive from the Tools menu. Large exports are emailed when ready.' },
  { id: 'two-factor', title: 'Two-factor authentication', content: 'Protect your account with a one-time code from an authenticator app in addition to your password.' },
  { id: 'delete-account', title: 'Closing your account', content: 'You can permanently delete your account and all associated data from the Privacy page. This cannot be undone.' },
  { id: 'seo-sitemaps', title: 'Sitemaps for search engines', content: 'A sitemap lists the pages of your site so that search engines such as Google can crawl and index them.' },
  { id: 'image-optimization', title: 'Image optimisation', content: 'Large photos are compressed and resized automatically so pages load faster on mobile networks.' },
  { id: 'plugin-install', title: 'Installing plugins', content: 'Extend your site with plugins: search the plugin directory, click Install, then Activate.' },
  { id: 'backups', title: 'Automatic backups', content: 'Your site is backed up every night. Restore any of the last 30 daily backups from the dashboard.' },
];

const KEYWORD_QUERIES: [string, string][] = [
  ['forgot password', 'password-reset'],
  ['refund my order', 'billing-refund'],
  ['express delivery', 'shipping-times'],
  ['rate limit 429', 'api-rate-limits'],
  ['dark theme', 'dark-mode'],
  ['restore backups', 'backups'],
  ['install plugins', 'plugin-install'],
  ['sitemap', 'seo-sitemaps'],
  ['authenticator app', 'two-factor'],
  ['ZIP archive', 'export-data'],
];

const SEMANTIC_QUERIES: [string, string][] = [
  ['I cannot remember my login credentials', 'password-reset'],
  ['when will my parcel get here', 'shipping-times'],
  ['make the screen darker at night', 'dark-mode'],
  ['pictures get smaller to open quickly on phones', 'image-optimization'],
  ['reimbursement for something I bought', 'billing-refund'],
  ['remove my profile forever', 'delete-account'],
];

let hybridApi: TestApi;
let keywordApi: TestApi;
let hybrid: { kb: KbClient; collection: string };
let keyword: { kb: KbClient; collection: string };

async function indexCorpus(api: TestApi) {
  const { kb } = await tenantWithClient(api);
  const collection = await kb.newCollection('labeled');
  await kb.index(collection, CORPUS);
  return { kb, collection };
}

beforeAll(async () => {
  await ensureLocalModel();
  hybridApi = await startApi();
  keywordApi = await startApi({ EMBEDDINGS_PROVIDER: 'none' });
  [hybrid, keyword] = await Promise.all([indexCorpus(hybridApi), indexCorpus(keywordApi)]);
});
afterAll(async () => {
  await Promise.all([hybridApi.close(), keywordApi.close()]);
});

const top = async (side: { kb: KbClient; collection: string }, query: string) => ids(await side.kb.searchOk(side.collection, { query, top_n: 5 }));

describe('labeled queries', () => {
  test.each(KEYWORD_QUERIES)('keyword-only: %s → %s first', async (query, relevant) => {
    expect((await top(keyword, query))[0]).toBe(relevant);
  });

  test.each(KEYWORD_QUERIES)('hybrid: %s → %s first', async (query, relevant) => {
    expect((await top(hybrid, query))[0]).toBe(relevant);
  });

  test.each(SEMANTIC_QUERIES)('semantic: %s → %s first with hybrid, missed by keyword-only', async (query, relevant) => {
    expect((await top(hybrid, query))[0]).toBe(relevant);
    expect(await top(keyword, query)).not.toContain(relevant);
  });

  test('hybrid hits found only semantically still carry a snippet: the opening of their content', async () => {
    const body = await hybrid.kb.searchOk(hybrid.collection, { query: 'make the screen darker at night', top_n: 1 });
    expect(body.citations[0].snippets).toEqual([expect.stringMatching(/^Switch the interface to a dark colour scheme/)]);
  });

  test('the keyword-only api says once in its logs that search is keyword-only', async () => {
    const notices = keywordApi.logs.filter((line) => line.includes('keyword-only'));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain('EMBEDDINGS_PROVIDER=none');
    expect(hybridApi.logs.filter((line) => line.includes('is hybrid'))).toHaveLength(1);
  });
});

describe('which documents hybrid search matches by words', () => {
  const titles = async (body: unknown) => {
    const result = await hybrid.kb.searchOk(hybrid.collection, { ...(body as object), aggregations: [{ name: 't', type: 'terms', field: 'title.keyword' }] });
    return (result.aggregations.t.buckets as Array<{ key: string }>).map((bucket) => bucket.key).sort();
  };

  test('most of the query\'s words are counted over title and content together', async () => {
    // "refund" is in the title only, "purchases" in the content only.
    expect(await titles({ query: 'refund purchases' })).toEqual(['Refund policy']);
    expect(ids(await hybrid.kb.searchOk(hybrid.collection, { query: 'refund purchases', sort: [{ field: 'title.keyword' }] }))).toEqual(['billing-refund']);
  });

  test('a sort changes the order of the documents matched by words, not which they are', async () => {
    // No document holds most of these words; each holds one.
    expect(await titles({ query: 'dark password' })).toEqual([]);
    expect(ids(await hybrid.kb.searchOk(hybrid.collection, { query: 'dark password', sort: [{ field: 'title.keyword' }] }))).toEqual([]);
    const matched = await titles({ query: 'password reset sign-in' });
    const sorted = await hybrid.kb.searchOk(hybrid.collection, { query: 'password reset sign-in', sort: [{ field: 'title.keyword' }] });
    expect(sorted.citations.map((c: { title: string }) => c.title).sort()).toEqual(matched);
  });
});
