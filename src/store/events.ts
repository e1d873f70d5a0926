import type { PoolClient } from 'pg';
import type { ToolEntry } from '../domain/agent-tools';
import { newId } from './ids';

/**
 * Appending to a session's event log. Callers hold the session row lock
 * (`lockSession`) inside one transaction, so sequence numbers and created_at are
 * assigned in order and the state rules see a consistent session.
 */
export interface NewEvent {
  type: string;
  content?: unknown[];
  /** Top-level members beyond content, e.g. stop_reason, context_tokens, tool_use_ids. */
  attributes?: Record<string, unknown>;
  usage?: Record<string, number> | null;
  error_code?: string | null;
  run_id?: string | null;
  /** Set by activities so a retried activity never appends the same event twice. */
  idempotency_key?: string | null;
  /** Events the gateway itself consumed on append (synthetic results, produced events). */
  processed?: boolean;
}

export interface EventRow {
  id: string;
  session_id: string;
  seq: string;
  type: string;
  content: unknown[];
  attributes: Record<string, unknown>;
  usage: Record<string, number> | null;
  error_code: string | null;
  run_id: string | null;
  processed_at: Date | null;
  created_at: Date;
}

export interface LockedSession {
  id: string;
  project_id: string;
  agent_id: string;
  status: string;
  active_run_id: string | null;
  pending_tool_use_ids: string[];
  cancelled_tool_use_ids: string[];
  owner_id: string | null;
  client_id: string | null;
  deleted_at: Date | null;
}

export const EVENT_COLUMNS = 'id, session_id, seq, type, content, attributes, usage, error_code, run_id, processed_at, created_at';

const LOCKED_SESSION_COLUMNS = ['id', 'project_id', 'agent_id', 'status', 'active_run_id', 'pending_tool_use_ids', 'cancelled_tool_use_ids', 'owner_id', 'client_id', 'deleted_at'];
/** The columns of a LockedSession, for statements that return the session row they changed. */
export const LOCKED_SESSION_RETURNING = LOCKED_SESSION_COLUMNS.join(', ');

export async function lockSession(client: PoolClient, sessionId: string): Promise<LockedSession | undefined> {
  const { rows } = await client.query<LockedSession>(`SELECT ${LOCKED_SESSION_RETURNING} FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
  return rows[0];
}

/** lockSession, and the model and tools of the session's agent (null if the agent is gone) read in the same statement. */
export async function lockSessionWithAgent(client: PoolClient, sessionId: string): Promise<(LockedSession & { agent: SessionAgent | null }) | undefined> {
  const { rows } = await client.query<LockedSession & { agent: SessionAgent | null }>(
    `SELECT ${LOCKED_SESSION_COLUMNS.map((column) => `s.${column}`).join(', ')},
            CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('model', a.model, 'tools', a.tools) END AS agent
       FROM sessions s LEFT JOIN agents a ON a.id = s.agent_id WHERE s.id = $1 FOR UPDATE OF s`,
    [sessionId],
  );
  return rows[0];
}
export interface SessionAgent {
  model: string;
  tools: ToolEntry[] | null;
}

/**
 * Inserts events in order after the session's last one. Events whose idempotency key
 * was already appended are not inserted again; the existing row is returned instead.
 * Notifies `session_events` listeners (the streaming endpoint) on commit when anything
 * new was inserted.
 *
 * One statement whatever the number of events: the idempotency lookup, the sequence
 * numbers and every insert travel in a single round trip (a run appends on every step).
 */
export async function appendEvents(client: PoolClient, sessionId: string, events: NewEvent[]): Promise<EventRow[]> {
  if (events.length === 0) return [];
  const input = events.map((event, ord) => ({
    ord,
    id: newId('evt'),
    type: event.type,
    content: event.content ?? [],
    attributes: event.attributes ?? {},
    usage: event.usage ?? null,
    error_code: event.error_code ?? null,
    run_id: event.run_id ?? null,
    idempotency_key: event.idempotency_key ?? null,
    processed: event.processed ?? false,
  }));
  // Fresh events get consecutive seqs and created_at values one microsecond apart after
  // the session's last event: created_at never goes backwards within a session, even if
  // the clock does. Postgres delivers one NOTIFY per transaction and payload.
  const { rows } = await client.query<EventRow & { idempotency_key: string | null; fresh: boolean }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(ord int, id text, type text, content jsonb, attributes jsonb, usage jsonb,
                                                        error_code text, run_id text, idempotency_key text, processed boolean)),
     existing AS (
       SELECT e.*, false AS fresh FROM session_events e
        WHERE e.session_id = $1 AND e.idempotency_key IN (SELECT idempotency_key FROM input WHERE idempotency_key IS NOT NULL)),
     fresh AS (
       SELECT i.*, row_number() OVER (ORDER BY i.ord) AS n, count(*) OVER () AS total FROM input i
        WHERE i.idempotency_key IS NULL OR i.idempotency_key NOT IN (SELECT idempotency_key FROM existing)),
     s AS (
       UPDATE sessions SET event_seq = event_seq + (SELECT count(*) FROM fresh),
              last_event_at = GREATEST(clock_timestamp(), COALESCE(last_event_at, '-infinity'::timestamptz) + interval '1 microsecond')
                              + ((SELECT count(*) FROM fresh) - 1) * interval '1 microsecond'
        WHERE id = $1 AND EXISTS (SELECT 1 FROM fresh)
        RETURNING event_seq, last_event_at),
     inserted AS (
       INSERT INTO session_events (id, session_id, seq, type, content, attributes, usage, error_code, run_id, idempotency_key, processed_at, created_at)
       SELECT f.id, $1, s.event_seq - f.total + f.n, f.type, f.content, f.attributes, f.usage, f.error_code, f.run_id, f.idempotency_key,
              CASE WHEN f.processed THEN s.last_event_at - (f.total - f.n) * interval '1 microsecond' END,
              s.last_event_at - (f.total - f.n) * interval '1 microsecond'
         FROM fresh f CROSS JOIN s CROSS JOIN (SELECT pg_notify('session_events', $1)) AS notified
       RETURNING ${EVENT_COLUMNS}, idempotency_key, true AS fresh)
     SELECT ${EVENT_COLUMNS}, idempotency_key, fresh FROM inserted
     UNION ALL
     SELECT ${EVENT_COLUMNS}, idempotency_key, fresh FROM existing`,
    [sessionId, JSON.stringify(input)],
  );
  const byId = new Map<string, EventRow>();
  const byKey = new Map<string, EventRow>();
  for (const { idempotency_key, fresh, ...row } of rows) {
    if (fresh) byId.set(row.id, row);
    else if (idempotency_key) byKey.set(idempotency_key, row);
  }
  return input.map((event) => (event.idempotency_key && byKey.get(event.idempotency_key)) || byId.get(event.id)!);
}

/** The public JSON shape of an event. `thought` blocks are dropped unless asked for. */
export function presentEvent(row: EventRow, options: { includeThinking?: boolean } = {}): Record<string, unknown> {
  let content = row.content;
  if (row.type === 'agent.message' && !options.includeThinking) {
    content = content.filter((block) => (block as { type?: string }).type !== 'thought');
  }
  if (row.type === 'user.tool_result') {
    // traceparent is accepted on input and never returned in history.
    content = content.map((block) => {
      const { traceparent: _omit, ...rest } = block as Record<string, unknown>;
      return rest;
    });
  }
  // Attributes starting with `_` are the gateway's own bookkeeping (e.g. citation data of a
  // knowledge-base tool result), never shown to clients.
  const attributes = Object.fromEntries(Object.entries(row.attributes).filter(([key]) => !key.startsWith('_')));
  return {
    id: row.id,
    type: row.type,
    content,
    ...attributes,
    ...(row.usage ? { usage: row.usage } : {}),
    ...(row.error_code ? { error_code: row.error_code } : {}),
    processed_at: row.processed_at ? row.processed_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  };
}
