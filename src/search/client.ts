import { Client } from '@elastic/elasticsearch';

export type SearchClient = Client;

export function createSearchClient(url: string): Client {
  return new Client({ node: url, requestTimeout: 30000, maxRetries: 2 });
}
