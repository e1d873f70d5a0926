import type { TestApi } from '../../support/harness';
import { bearer, createTenant, type Tenant } from '../../support/factories';

/**
 * Helpers shared by the agents and sessions integration tests: a small JSON client over
 * real HTTP, and factories that create agents and sessions through the public API.
 */
export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: Headers;
}

export function apiClient(api: TestApi, token: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...bearer(token), ...headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  return {
    get: (path: string, headers?: Record<string, string>) => call('GET', path, undefined, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => call('POST', path, body ?? {}, headers),
    patch: (path: string, body: unknown, headers?: Record<string, string>) => call('PATCH', path, body, headers),
    delete: (path: string, headers?: Record<string, string>) => call('DELETE', path, undefined, headers),
  };
}
export type ApiClient = ReturnType<typeof apiClient>;

/** A model with the `tools` capability and a reasoning_effort enum (minimal..high); it supports no temperature. */
export const TOOLS_MODEL = 'openai/gpt-5-mini';
/** A model with tools, temperature 0..2 and no reasoning_effort enum. */
export const PLAIN_MODEL = 'openai/gpt-4.1-mini';
/** A model with tools, temperature 0..2 and a reasoning_effort enum (none, low, medium, high). */
export const TUNABLE_MODEL = 'google/gemini-2.5-flash';
/** A model with tools, temperature 0..1 and a reasoning_effort enum (low, medium, high). */
export const NARROW_TEMPERATURE_MODEL = 'anthropic/claude-haiku-4-5';

export function agentBody(projectId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { project_id: projectId, name: 'Helper', model: TOOLS_MODEL, ...overrides };
}

export async function createAgent(client: ApiClient, projectId: string, overrides: Record<string, unknown> = {}) {
  const reply = await client.post('/v1/agents', agentBody(projectId, overrides));
  if (reply.status !== 201) throw new Error(`agent create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as { id: string; version: number; project_id: string; [key: string]: unknown };
}

export async function createSession(client: ApiClient, agentId: string, extra: Record<string, unknown> = {}) {
  const reply = await client.post('/v1/sessions', { agent: agentId, ...extra });
  if (reply.status !== 201) throw new Error(`session create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as { id: string; status: string; [key: string]: unknown };
}

/** A knowledge-base collection created through the public API (in the caller's project, or `projectId` for site tokens). */
export async function createCollection(client: ApiClient, projectId?: string): Promise<string> {
  const reply = await client.post('/v1/kb/collections', { name: `kb ${Date.now()} ${Math.random()}`, ...(projectId ? { project_id: projectId } : {}) });
  if (reply.status !== 201) throw new Error(`collection create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.id as string;
}

/** A tenant with a client for its `all` key, an agent and nothing else. */
export async function tenantWithAgent(api: TestApi, agentOverrides: Record<string, unknown> = {}) {
  const tenant: Tenant = await createTenant(api.deps.db);
  const client = apiClient(api, tenant.key);
  const agent = await createAgent(client, tenant.projectId, agentOverrides);
  return { tenant, client, agent };
}

/** Puts a session in the run state the workflow would leave it in (the workflow itself is tested elsewhere). */
export async function setRunState(
  api: TestApi,
  sessionId: string,
  state: { active_run_id?: string | null; pending?: string[]; cancelled?: string[]; status?: string },
): Promise<void> {
  await api.deps.db.query(
    `UPDATE sessions SET active_run_id = $2, pending_tool_use_ids = $3, cancelled_tool_use_ids = $4, status = COALESCE($5, status) WHERE id = $1`,
    [sessionId, state.active_run_id ?? null, JSON.stringify(state.pending ?? []), JSON.stringify(state.cancelled ?? []), state.status ?? null],
  );
}

export const userMessage = (text = 'hello') => ({ type: 'user.message', content: [{ type: 'text', text }] });
export const toolResult = (toolUseId: string, extra: Record<string, unknown> = {}) => ({
  type: 'user.tool_result',
  content: [{ type: 'tool_result', tool_use_id: toolUseId, content: 'ok', ...extra }],
});
