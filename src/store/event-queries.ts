import type { Queryable } from './db';
import { CURSOR_AT } from './agents';
import { EVENT_COLUMNS, type EventRow } from './events';

/**
 * Reading a session's event log. Order is (created_at, seq): appends hold the session row
 * lock, so both grow together and an event becomes visible only after every event before
 * it. Keyset pages therefore never skip or repeat an event while writers append.
 */
export interface EventPosition {
  at: string;
  seq: string;
}

export type ListedEvent = EventRow & { cursor_at: string };

/**
 * Without include_thinking, an agent.message holding only a thought block (a turn that
 * thought, then called tools) would show as an empty message: such events are left out.
 * Listings filter in SQL, so a page holds `limit` shown events; the event stream, which has
 * no pages, filters the rows it read with `hiddenWithoutThinking` (the same rule), keeping
 * its per-event read as cheap as it was.
 */
const VISIBLE_WITHOUT_THINKING = `NOT (type = 'agent.message' AND NOT jsonb_path_exists(content, '$[*] ? (@.type != "thought")'))`;
const visibility = (includeThinking: boolean) => (includeThinking ? '' : `AND ${VISIBLE_WITHOUT_THINKING}`);

export const hiddenWithoutThinking = (row: Pick<EventRow, 'type' | 'content'>): boolean =>
  row.type === 'agent.message' && (row.content as Array<{ type?: unknown }>).every((block) => block.type === 'thought');

export async function listEvents(
  db: Queryable,
  sessionId: string,
  options: { order: 'asc' | 'desc'; limit: number; after?: EventPosition; includeThinking: boolean },
): Promise<ListedEvent[]> {
  const params: unknown[] = [sessionId, options.limit];
  const direction = options.order === 'asc' ? 'ASC' : 'DESC';
  let keyset = '';
  if (options.after) {
    params.push(options.after.at, options.after.seq);
    keyset = `AND (created_at, seq) ${options.order === 'asc' ? '>' : '<'} ($3::timestamptz, $4::bigint)`;
  }
  const { rows } = await db.query<ListedEvent>(
    `SELECT ${EVENT_COLUMNS}, ${CURSOR_AT()} AS cursor_at FROM session_events
      WHERE session_id = $1 ${keyset} ${visibility(options.includeThinking)} ORDER BY created_at ${direction}, seq ${direction} LIMIT $2`,
    params,
  );
  return rows;
}

/** Where an event sits in its session's log, or undefined when it is not this session's. */
export async function findEventPosition(db: Queryable, sessionId: string, eventId: string): Promise<EventPosition | undefined> {
  const { rows } = await db.query<EventPosition>(
    `SELECT ${CURSOR_AT()} AS at, seq FROM session_events WHERE session_id = $1 AND id = $2`,
    [sessionId, eventId],
  );
  return rows[0];
}

/** The session's last assigned sequence (0 before the first event). */
export async function lastEventSeq(db: Queryable, sessionId: string): Promise<string> {
  const { rows } = await db.query<{ seq: string }>('SELECT COALESCE(MAX(seq), 0)::text AS seq FROM session_events WHERE session_id = $1', [sessionId]);
  return rows[0]!.seq;
}

/** Events after a sequence number, in order (the stream's catch-up read; it applies hiddenWithoutThinking itself). */
export async function eventsAfterSeq(db: Queryable, sessionId: string, seq: string, limit = 500): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>({
    name: 'events_after_seq',
    text: `SELECT ${EVENT_COLUMNS} FROM session_events WHERE session_id = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3`,
    values: [sessionId, seq, limit],
  });
  return rows;
}
