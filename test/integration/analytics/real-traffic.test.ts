import { startGatewayEnv, usageRowFor, type GatewayEnv } from '../gateway/gateway-env';
import { bearer, createKey, createTenant, json, type Tenant } from '../../support/factories';
import { uniqueId } from '../../support/config';
import { signDevIdpToken } from '../../../src/auth/tokens';

/**
 * Gateway traffic, metered as it happens, read back through GET /v1/analytics: each caller's
 * actor type and application land in their own rows (other analytics tests
 * write usage rows directly).
 */
let env: GatewayEnv;
let tenant: Tenant;
beforeAll(async () => {
  env = await startGatewayEnv();
  tenant = await createTenant(env.api.deps.db);
});
afterAll(() => env.close());

const chat = async (credential: string, application?: string) => {
  const response = await fetch(`${env.api.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...bearer(credential), ...(application ? { 'x-application': application } : {}) },
    body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hello' }] }),
  });
  if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`);
  return (await usageRowFor(env.api, response.headers.get('x-request-id')!)).credits_nano;
};

test('chat calls by a project key and a personal key appear under their caller dimensions, with their credits', async () => {
  const start = Math.floor(Date.now() / 1000) - 60;
  const keyCredits = Number(await chat(tenant.key, 'svc-ai-playground')) + Number(await chat(tenant.key, 'svc-ai-playground'));
  const personal = await createKey(env.api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: uniqueId('user-') });
  const personalCredits = Number(await chat(personal.key));
  const analyst = await signDevIdpToken(env.api.deps.config, { subject: uniqueId('analyst-'), accountIds: [tenant.accountId] });
  const params = new URLSearchParams({
    project_id: tenant.projectId,
    start_time: String(start),
    end_time: String(start + 3600),
    bucket_width: '1h',
    group_by: 'client_id,auth_method,actor_type,application,model,operation',
  });
  const response = await fetch(`${env.api.url}/v1/analytics?${params}`, { headers: bearer(analyst) });
  expect(response.status).toBe(200);
  const body = await json(response);
  const rows = [...body.totals.models].sort((a, b) => a.actor_type.localeCompare(b.actor_type));
  expect(rows).toEqual([
    { model: 'openai/gpt-4o', operation: 'chat', client_id: '', auth_method: 'api_key', actor_type: 'authenticated', application: 'unknown', credits_nano: personalCredits, request_count: 1 },
    { model: 'openai/gpt-4o', operation: 'chat', client_id: '', auth_method: 'api_key', actor_type: 'service', application: 'svc-ai-playground', credits_nano: keyCredits, request_count: 2 },
  ]);
  expect(body.totals).toMatchObject({ credits_nano: keyCredits + personalCredits, request_count: 3 });
  expect(keyCredits).toBeGreaterThan(0);

  // Grouped by model alone (the narrower summary path): one row with everything.
  const byModel = await json(await fetch(`${env.api.url}/v1/analytics?${new URLSearchParams({ project_id: tenant.projectId, start_time: String(start), end_time: String(start + 3600), bucket_width: '1h', group_by: 'model' })}`, { headers: bearer(analyst) }));
  expect(byModel.totals.models).toEqual([{ model: 'openai/gpt-4o', credits_nano: keyCredits + personalCredits, request_count: 3 }]);
});
