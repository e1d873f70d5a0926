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
  const { rows } = await client.query<LockedSession>({ name: 'lock_session', text: `SELECT ${LOCKED_SESSION_RETURNING} FROM sessions WHERE id = $1 FOR UPDATE`, values: [sessionId] });
  return rows[0];
}

/**
 * lockSession, and in the same statement the session's agent (model, tools, whether it was
 * deleted; null if the row is gone).
 */
export async function lockSessionWithAgent(client: PoolClient, sessionId: string): Promise<(LockedSession & { agent: SessionAgent | null }) | undefined> {
  const { rows } = await client.query<LockedSession & { agent: SessionAgent | null }>({
    name: 'lock_session_with_agent',
    text: `SELECT ${LOCKED_SESSION_COLUMNS.map((column) => `s.${column}`).join(', ')},
                  CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('model', a.model, 'tools', a.tools, 'deleted', a.deleted_at IS NOT NULL) END AS agent
             FROM sessions s LEFT JOIN agents a ON a.id = s.agent_id WHERE s.id = $1 FOR UPDATE OF s`,
    values: [sessionId],
  });
  return rows[0];
}
export interface SessionAgent {
  model: string;
  tools: ToolEntry[] | null;
  /** The agent was deleted: its sessions start no new runs from the events API. */
  deleted?: boolean;
}

/**
 * Inserts events in order after the session's last one. Events whose idempotency key
 * was already appended are not inserted again; the existing row is returned instead.
 * Notifies `session_events` listeners (the streaming endpoint) on commit when anything
 * new was inserted.
 */
export async function appendEvents(client: PoolClient, sessionId: string, events: NewEvent[]): Promise<EventRow[]> {
  const out: EventRow[] = [];
  for (const event of events) out.push((await appendEvent(client, sessionId, event)).row);
  return out;
}

/** appendEvents for one event, saying whether it was inserted now (false: its key was already in the log). */
export async function appendEvent(client: PoolClient, sessionId: string, event: NewEvent): Promise<{ row: EventRow; inserted: boolean }> {
  const key = event.idempotency_key ?? null;
  // One round trip: the insert itself skips an event whose key is already in the log.
  // Only then (a retried activity) is the existing row read back.
  const { rows } = await client.query<EventRow>({
    name: 'append_event',
    text: APPEND_EVENT,
    values: [
      sessionId,
      newId('evt'),
      event.type,
      JSON.stringify(event.content ?? []),
      JSON.stringify(event.attributes ?? {}),
      event.usage ? JSON.stringify(event.usage) : null,
      event.error_code ?? null,
      event.run_id ?? null,
      key,
      event.processed ?? false,
    ],
  });
  if (rows[0]) return { row: rows[0], inserted: true };
  const appended = key ? await appendedEvent(client, sessionId, key) : undefined;
  if (!appended) throw new Error(`session ${sessionId} not found`);
  return { row: appended, inserted: false };
}

// created_at never goes backwards within a session, even if the clock does. The NOTIFY
// rides along with each insert; Postgres delivers one per transaction and payload.
const APPEND_EVENT = `WITH s AS (
     UPDATE sessions SET event_seq = event_seq + 1,
            last_event_at = GREATEST(clock_timestamp(), COALESCE(last_event_at, '-infinity'::timestamptz) + interval '1 microsecond')
      WHERE id = $1
        AND ($9::text IS NULL OR NOT EXISTS (SELECT 1 FROM session_events WHERE session_id = $1 AND idempotency_key = $9::text))
      RETURNING event_seq, last_event_at)
   INSERT INTO session_events (id, session_id, seq, type, content, attributes, usage, error_code, run_id, idempotency_key, processed_at, created_at)
   SELECT $2, $1, s.event_seq, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $10::boolean THEN s.last_event_at END, s.last_event_at
     FROM s CROSS JOIN (SELECT pg_notify('session_events', $1)) AS notified
   RETURNING ${EVENT_COLUMNS}`;

async function appendedEvent(client: PoolClient, sessionId: string, key: string): Promise<EventRow | undefined> {
  const { rows } = await client.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM session_events WHERE session_id = $1 AND idempotency_key = $2`, [sessionId, key]);
  return rows[0];
}

/**
 * The stored attributes an event type shows as top-level fields (the spec's). Every other
 * attribute is the gateway's own bookkeeping (a turn's stop, a run cycle's kind, citation
 * data, a compaction's extent) and never reaches clients.
 */
const PUBLIC_ATTRIBUTES: Record<string, readonly string[]> = {
  'session.status_idle': ['stop_reason', 'context_tokens', 'tool_use_ids', 'tool_traceparents'],
};

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
  const shown = PUBLIC_ATTRIBUTES[row.type] ?? [];
  const attributes = Object.fromEntries(Object.entries(row.attributes).filter(([key]) => shown.includes(key)));
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
