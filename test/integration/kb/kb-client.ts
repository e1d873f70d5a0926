import { installLocalModel, defaultModelDir } from '../../../src/search/embeddings/local-model-files';
import { createTenant, type Tenant, bearer, json } from '../../support/factories';
import type { TestApi } from '../../support/harness';

/** A thin HTTP client for the knowledge-base endpoints, bound to one api and one credential. */
export function kbClient(api: TestApi, token: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${api.url}/v1/kb/collections${path}`, {
      method,
      headers: { ...bearer(token), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: await json(response), headers: response.headers };
  };
  return {
    call,
    createCollection: (body: unknown) => call('POST', '', body),
    /** Creates a collection and returns its id; fails the test on anything but 201. */
    async newCollection(name = `c-${Math.random().toString(36).slice(2)}`): Promise<string> {
      const response = await call('POST', '', { name });
      if (response.status !== 201) throw new Error(`create collection: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body.id;
    },
    bulk: (collectionId: string, documents: unknown) => call('POST', `/${collectionId}/documents/bulk`, { documents }),
    /** Indexes documents and fails the test on any item error. */
    async index(collectionId: string, documents: object[]): Promise<void> {
      const response = await call('POST', `/${collectionId}/documents/bulk`, { documents });
      if (response.status !== 200 || response.body.errors) throw new Error(`bulk: ${response.status} ${JSON.stringify(response.body)}`);
    },
    search: (collectionId: string, body: unknown, headers?: Record<string, string>) => call('POST', `/${collectionId}/search`, body, headers),
    /** Searches and fails the test on anything but 200. */
    async searchOk(collectionId: string, body: unknown) {
      const response = await call('POST', `/${collectionId}/search`, body);
      if (response.status !== 200) throw new Error(`search: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body;
    },
  };
}

export type KbClient = ReturnType<typeof kbClient>;

export async function tenantWithClient(api: TestApi): Promise<{ tenant: Tenant; kb: KbClient }> {
  const tenant = await createTenant(api.deps.db);
  return { tenant, kb: kbClient(api, tenant.key) };
}

/** The local model is installed by the install scripts; tests make sure of it the same way. */
export async function ensureLocalModel(): Promise<void> {
  await installLocalModel(process.env.EMBEDDINGS_MODEL_DIR ?? defaultModelDir());
}

export const ids = (body: { citations: { id: string }[] }) => body.citations.map((c) => c.id);
