import { setBalanceNano } from '../../support/credits';
import { json } from '../../support/factories';
import type { GatewayEnv } from '../gateway/gateway-env';

export { startGatewayEnv, usageRowFor, type GatewayEnv } from '../gateway/gateway-env';
export { json };

/** POSTs JSON with the tenant's key (or `key`). */
export const postJson = (env: GatewayEnv, path: string, body: unknown, key = env.tenant.key, headers: Record<string, string> = {}) =>
  fetch(`${env.api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** The simulator requests made to a path suffix since `since`. */
export const simRequestsTo = (env: GatewayEnv, suffix: string, since = 0) => env.sim.requests.slice(since).filter((r) => r.path.endsWith(suffix));

/** Sets the project's balance to zero for `run`, then restores it. */
export async function withEmptyBalance(env: GatewayEnv, run: () => Promise<void>): Promise<void> {
  await setBalanceNano(env.api.deps.db, env.tenant.projectId, 0n, [env.api.deps]);
  try {
    await run();
  } finally {
    await env.api.deps.db.query('UPDATE project_credits SET balance_nano = 1000000000000 WHERE project_id = $1', [env.tenant.projectId]);
  }
}

/** Asserts a gateway error envelope with this status and type; returns the error. */
export async function expectError(response: Response, status: number, type: string) {
  const body = await json(response);
  expect({ status: response.status, type: body.error?.type }).toEqual({ status, type });
  expect(body.error).toMatchObject({ code: status, request_id: response.headers.get('x-request-id') });
  return body.error as { message: string; type: string; code: number };
}
