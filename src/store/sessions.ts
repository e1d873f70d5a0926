import { accountOfProject, siteOfClient } from './sites';
import type { Queryable } from './db';
import { CURSOR_AT, presentAgent, type AgentRow } from './agents';
import type { RunState } from '../domain/events';

/** Session rows (table sessions). Soft-deleted sessions are invisible to every lookup here. */
export interface SessionRow {
  id: string;
  project_id: string;
  agent_id: string;
  status: string;
  title: string | null;
  reasoning_effort: string | null;
  metadata: Record<string, string>;
  owner_id: string | null;
  client_id: string | null;
  active_run_id: string | null;
  // bigint columns arrive as strings
  input_tokens: string;
  output_tokens: string;
  cache_read_input_tokens: string;
  cache_creation_input_tokens: string;
  credits_nano: string;
  archived_at: Date | null;
  created_at: Date;
  updated_at: Date | null;
  cursor_at: string;
}

const COLUMNS = `id, project_id, agent_id, status, title, reasoning_effort, metadata, owner_id, client_id, active_run_id,
  input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens, credits_nano,
  archived_at, created_at, updated_at, ${CURSOR_AT()} AS cursor_at`;

export interface NewSession {
  id: string;
  projectId: string;
  agentId: string;
  title: string | null;
  reasoningEffort: string | null;
  metadata: Record<string, string>;
  ownerId: string | null;
  clientId: string | null;
}

/**
 * Inserts the session if its agent still exists, else returns undefined. The agent row is
 * share-locked, so an agent delete in progress is waited for: a session is never created
 * for an agent whose delete committed first.
 */
export async function insertSession(db: Queryable, session: NewSession): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `INSERT INTO sessions (id, project_id, agent_id, title, reasoning_effort, metadata, owner_id, client_id)
     SELECT $1, $2, a.id, $4, $5, $6, $7, $8 FROM agents a WHERE a.id = $3 AND a.deleted_at IS NULL FOR SHARE
     RETURNING ${COLUMNS}`,
    [session.id, session.projectId, session.agentId, session.title, session.reasoningEffort, JSON.stringify(session.metadata), session.ownerId, session.clientId],
  );
  return rows[0];
}

export async function findSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>({ name: 'get_session', text: `SELECT ${COLUMNS} FROM sessions WHERE id = $1 AND deleted_at IS NULL`, values: [id] });
  return rows[0];
}

export interface SessionFilter {
  projectId: string;
  agentId?: string;
  metadata?: { key: string; value: string };
  includeArchived: boolean;
}

/** Newest first, keyset on (created_at, id); `after` is the last row of the previous page. */
export async function listSessions(db: Queryable, filter: SessionFilter, limit: number, after?: { at: string; id: string }): Promise<SessionRow[]> {
  const params: unknown[] = [filter.projectId, limit];
  const where = ['project_id = $1', 'deleted_at IS NULL'];
  if (!filter.includeArchived) where.push('archived_at IS NULL');
  if (filter.agentId) where.push(`agent_id = $${params.push(filter.agentId)}`);
  if (filter.metadata) where.push(`metadata @> $${params.push(JSON.stringify({ [filter.metadata.key]: filter.metadata.value }))}::jsonb`);
  if (after) where.push(`(created_at, id) < ($${params.push(after.at)}::timestamptz, $${params.push(after.id)})`);
  const { rows } = await db.query<SessionRow>(
    `SELECT ${COLUMNS} FROM sessions WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return rows;
}

/** The session, locked for update until the transaction ends (PATCH). */
export async function lockSessionRow(client: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await client.query<SessionRow>(`SELECT ${COLUMNS} FROM sessions WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`, [id]);
  return rows[0];
}

/** Writes the editable fields (title, metadata) and sets updated_at. */
export async function updateSessionFields(client: Queryable, id: string, fields: { title: string | null; metadata: Record<string, string> }): Promise<SessionRow> {
  const { rows } = await client.query<SessionRow>(
    `UPDATE sessions SET title = $2, metadata = $3, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, fields.title, JSON.stringify(fields.metadata)],
  );
  return rows[0]!;
}

// Archive and unarchive are idempotent: repeating one changes nothing, updated_at included
// (SET expressions see the row as it was before the update).
export async function archiveSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `UPDATE sessions SET archived_at = COALESCE(archived_at, now()),
            updated_at = CASE WHEN archived_at IS NULL THEN now() ELSE updated_at END
      WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

export async function unarchiveSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `UPDATE sessions SET archived_at = NULL,
            updated_at = CASE WHEN archived_at IS NULL THEN updated_at ELSE now() END
      WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

/**
 * A session's reasoning_effort override the agent's new model does not take is cleared (as the
 * agent's own is), so a session never shows an override the runtime would not apply.
 */
export async function clearReasoningEffortsNotIn(client: Queryable, agentId: string, accepted: readonly string[]): Promise<void> {
  await client.query(
    `UPDATE sessions SET reasoning_effort = NULL, updated_at = now()
      WHERE agent_id = $1 AND reasoning_effort IS NOT NULL AND NOT (reasoning_effort = ANY($2::text[]))`,
    [agentId, accepted],
  );
}

/** Soft delete: the row stays for the event log's foreign keys and for billing; status becomes terminated. */
/** Records that a deleted session's workflow has ended (or never ran): the reconciler leaves it alone. */
export async function markWorkflowEnded(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE sessions SET workflow_ended_at = now() WHERE id = $1 AND workflow_ended_at IS NULL', [id]);
}

/** Soft-deletes the session; false when it was already deleted (a concurrent delete won). */
export async function softDeleteSession(client: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await client.query(`UPDATE sessions SET deleted_at = now(), updated_at = now(), status = 'terminated' WHERE id = $1 AND deleted_at IS NULL`, [id]);
  return rowCount === 1;
}

/** Writes the run state decided by the events route (the caller holds the session row lock). */
export async function saveRunState(client: Queryable, id: string, state: RunState, startsRun: boolean): Promise<void> {
  await client.query(
    `UPDATE sessions SET active_run_id = $2, pending_tool_use_ids = $3, cancelled_tool_use_ids = $4,
            status = CASE WHEN $5::boolean THEN 'running' ELSE status END, updated_at = now()
      WHERE id = $1`,
    [id, state.active_run_id, JSON.stringify(state.pending_tool_use_ids), JSON.stringify(state.cancelled_tool_use_ids), startsRun],
  );
}

/**
 * The per-site switch "asynchronous execution enabled" (sites.async_execution_enabled,
 * default true). Sessions created without a site and sites unknown by client id count
 * as enabled.
 */
export async function isAsyncExecutionEnabled(db: Queryable, session: { client_id: string | null; project_id: string }): Promise<boolean> {
  if (!session.client_id) return true;
  const { rows } = await db.query<{ enabled: boolean | null }>(`SELECT ${siteOfClient('async_execution_enabled', '$1', accountOfProject('$2'))} AS enabled`, [
    session.client_id,
    session.project_id,
  ]);
  return rows[0]?.enabled ?? true;
}

const count = (value: string) => Number(value);

export function presentSession(row: SessionRow, agent: AgentRow): Record<string, unknown> {
  return {
    id: row.id,
    type: 'session',
    agent: presentAgent(agent),
    status: row.status,
    title: row.title,
    ...(row.reasoning_effort !== null ? { reasoning_effort: row.reasoning_effort } : {}),
    metadata: row.metadata,
    usage: {
      input_tokens: count(row.input_tokens),
      output_tokens: count(row.output_tokens),
      cache_read_input_tokens: count(row.cache_read_input_tokens),
      cache_creation_input_tokens: count(row.cache_creation_input_tokens),
      credits_nano: count(row.credits_nano),
    },
    archived_at: row.archived_at ? row.archived_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at ? row.updated_at.toISOString() : null,
    ...(row.owner_id !== null ? { owner_id: row.owner_id } : {}),
  };
}
