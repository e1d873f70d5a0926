import { startApi, type TestApi } from '../../support/harness';
import { createTenant, type Tenant } from '../../support/factories';
import { startTestSimulator, type Simulator } from '../../support/simulator';
import type { Config } from '../../../src/config';

export interface GatewayEnv {
  api: TestApi;
  sim: Simulator;
  tenant: Tenant;
  close(): Promise<void>;
}

/** The real api in-process, every provider pointed at an in-process simulator, and a fresh tenant with credits. */
export async function startGatewayEnv(overrides: Partial<Record<keyof Config, string>> = {}): Promise<GatewayEnv> {
  const sim = await startTestSimulator();
  const api = await startApi({
    SIMULATOR_URL: sim.url,
    OPENAI_API_KEY: '',
    OPENAI_BASE_URL: '',
    ANTHROPIC_API_KEY: '',
    ANTHROPIC_BASE_URL: '',
    GOOGLE_API_KEY: '',
    GOOGLE_BASE_URL: '',
    RATE_LIMIT_ENABLED: 'false',
    ...overrides,
  });
  const tenant = await createTenant(api.deps.db);
  return {
    api,
    sim,
    tenant,
    async close() {
      await api.close();
      await sim.close();
    },
  };
}

/** The usage row of one request (metering runs right after the response, so poll briefly). */
export async function usageRowFor(api: TestApi, requestId: string): Promise<Record<string, string>> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const { rows } = await api.deps.db.query('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
    if (rows.length > 0) return rows[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no usage row for request ${requestId}`);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
