import type { Queryable } from './db';
import type { AgentFields } from '../domain/agents';
import type { ToolEntry } from '../domain/agent-tool-entries';

/** Agent rows (table agents). Soft-deleted agents are invisible to every lookup here. */
export interface AgentRow extends AgentFields {
  id: string;
  version: number;
  created_at: Date;
  updated_at: Date | null;
  /** created_at as exact text (microseconds), for keyset cursors. */
  cursor_at: string;
}

/** Exact created_at text: JS Dates keep only milliseconds, keyset comparison needs all six digits. */
export const CURSOR_AT = (column = 'created_at') => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const COLUMNS = `id, project_id, version, name, model, description, system_prompt, temperature, max_tokens, reasoning_effort,
  scopes, settings, mcp_servers, tools, skills, metadata, created_at, updated_at, ${CURSOR_AT()} AS cursor_at`;

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

function values(fields: AgentFields): unknown[] {
  return [
    fields.project_id,
    fields.name,
    fields.model,
    fields.description,
    fields.system_prompt,
    fields.temperature,
    fields.max_tokens,
    fields.reasoning_effort,
    json(fields.scopes),
    json(fields.settings),
    json(fields.mcp_servers),
    json(fields.tools),
    json(fields.skills),
    JSON.stringify(fields.metadata),
  ];
}

export async function insertAgent(db: Queryable, id: string, fields: AgentFields): Promise<AgentRow> {
  const { rows } = await db.query<AgentRow>(
    `INSERT INTO agents (id, project_id, name, model, description, system_prompt, temperature, max_tokens, reasoning_effort,
                         scopes, settings, mcp_servers, tools, skills, metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ${COLUMNS}`,
    [id, ...values(fields)],
  );
  return rows[0]!;
}

export async function findAgent(db: Queryable, id: string): Promise<AgentRow | undefined> {
  const { rows } = await db.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE id = $1 AND deleted_at IS NULL`, [id]);
  return rows[0];
}

/**
 * The agent, share-locked until the transaction ends: what a session is created from stays as
 * read (no PATCH, move or delete in between; session creates do not wait on each other).
 */
export async function lockAgentShared(client: Queryable, id: string): Promise<AgentRow | undefined> {
  const { rows } = await client.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE id = $1 AND deleted_at IS NULL FOR SHARE`, [id]);
  return rows[0];
}

/**
 * The agent, locked for update until the transaction ends (PATCH, DELETE). `NO KEY UPDATE`: the
 * foreign-key checks of a session row written meanwhile (an event appended under the session's
 * lock) take only a key-share lock on the agent, which this does not block; a plain `FOR UPDATE`
 * did, and with the PATCH then waiting for that session's row (moving it), the two deadlocked.
 */
export async function lockAgent(client: Queryable, id: string): Promise<AgentRow | undefined> {
  const { rows } = await client.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE`, [id]);
  return rows[0];
}

/**
 * Writes the new fields and bumps the version. A session's project is its agent's, so a
 * project reassignment moves the agent's sessions with it in the same transaction.
 */
export async function updateAgent(client: Queryable, id: string, fields: AgentFields, previousProjectId: string): Promise<AgentRow> {
  const { rows } = await client.query<AgentRow>(
    `UPDATE agents SET project_id = $2, name = $3, model = $4, description = $5, system_prompt = $6, temperature = $7,
            max_tokens = $8, reasoning_effort = $9, scopes = $10, settings = $11, mcp_servers = $12, tools = $13, skills = $14,
            metadata = $15, version = version + 1, updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, ...values(fields)],
  );
  if (fields.project_id !== previousProjectId) {
    await client.query('UPDATE sessions SET project_id = $2 WHERE agent_id = $1', [id, fields.project_id]);
  }
  return rows[0]!;
}

export async function softDeleteAgent(client: Queryable, id: string): Promise<void> {
  // No field changes: version and updated_at stay as they were (sessions still show the agent).
  await client.query('UPDATE agents SET deleted_at = now() WHERE id = $1', [id]);
}

/** Newest first; `after` is the last row of the previous page. */
export async function listAgents(db: Queryable, projectId: string, limit: number, after?: { at: string; id: string }): Promise<AgentRow[]> {
  const params: unknown[] = [projectId, limit];
  let keyset = '';
  if (after) {
    params.push(after.at, after.id);
    keyset = 'AND (created_at, id) < ($3::timestamptz, $4)';
  }
  const { rows } = await db.query<AgentRow>(
    `SELECT ${COLUMNS} FROM agents WHERE project_id = $1 AND deleted_at IS NULL ${keyset} ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return rows;
}

/** The public JSON of an agent. Unset scalars are omitted; unset lists and maps are empty. */
export function presentAgent(row: AgentRow): Record<string, unknown> {
  return {
    id: row.id,
    type: 'agent',
    version: row.version,
    project_id: row.project_id,
    name: row.name,
    model: row.model,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.system_prompt !== null ? { system_prompt: row.system_prompt } : {}),
    ...(row.temperature !== null ? { temperature: row.temperature } : {}),
    ...(row.max_tokens !== null ? { max_tokens: row.max_tokens } : {}),
    ...(row.reasoning_effort !== null ? { reasoning_effort: row.reasoning_effort } : {}),
    scopes: row.scopes ?? [],
    settings: row.settings ?? {},
    mcp_servers: row.mcp_servers ?? [],
    tools: (row.tools ?? []) as ToolEntry[],
    skills: row.skills ?? [],
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at ? row.updated_at.toISOString() : null,
  };
}

export const agentFieldsOf = (row: AgentRow): AgentFields => ({
  project_id: row.project_id,
  name: row.name,
  model: row.model,
  description: row.description,
  system_prompt: row.system_prompt,
  temperature: row.temperature,
  max_tokens: row.max_tokens,
  reasoning_effort: row.reasoning_effort,
  scopes: row.scopes,
  settings: row.settings,
  mcp_servers: row.mcp_servers,
  tools: row.tools,
  skills: row.skills,
  metadata: row.metadata,
});

/** Agents by id, soft-deleted ones included: a session still shows the agent it was bound to. */
export async function findAgentsByIds(db: Queryable, ids: string[]): Promise<Map<string, AgentRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE id = ANY($1)`, [[...new Set(ids)]]);
  return new Map(rows.map((row) => [row.id, row]));
}
