import { ApplicationFailure } from '@temporalio/activity';
import type { Queryable } from '../src/store/db';
import { charsetOf, isTextMediaType, mediaTypeEssence, readTextFile } from '../src/domain/fields';
import { EVENT_COLUMNS, type EventRow } from '../src/store/events';
import type { RunToolEntry as ToolEntry } from '../src/domain/run-tools';
import { documentAsText, type AssistantPart, type DocumentPart, type TextPart, type UnifiedMessage, type UserPart } from '../src/providers';

/**
 * What a model turn is built from: the agent, the session, and the event log since the
 * latest compaction (whose summary stands in for everything before it).
 */
export interface AgentRow {
  id: string;
  model: string;
  system_prompt: string | null;
  temperature: number | null;
  max_tokens: number | null;
  reasoning_effort: string | null;
  tools: ToolEntry[] | null;
  settings: Record<string, unknown> | null;
}

export interface Citation {
  type: string;
  document_uri: string;
  document_title: string;
}

export interface RunContext {
  session: { id: string; project_id: string; reasoning_effort: string | null; client_id: string | null; active_run_id: string | null; deleted_at: string | null };
  agent: AgentRow;
  summary?: string;
  /** Deferred tools loaded before the latest compaction (their `tool_loaded` results are summarized away). */
  summaryLoadedTools?: string[];
  events: EventRow[];
  /** The citations recorded by the given run's knowledge-base tool results, in retrieval order (all of the run, compacted or not). */
  runCitations: Citation[][];
  /** The project's credit balance as this read found it (nothing the run has not been billed for yet is in it). */
  balanceNano: bigint;
  /** What the project's other runs in flight have used and not yet been billed for. */
  othersUnbilledNano: bigint;
}

/**
 * SQL for what the project's other runs in flight (all but the given session's) have used and
 * not yet been billed for: their turns and compactions since each one's latest closing event
 * (a run's cycle is billed when it closes). Indexed by migration 058.
 */
export const othersUnbilledSql = (projectId: string, sessionId: string): string => `
  (SELECT COALESCE(sum(CASE WHEN e.type = 'session.compaction' THEN (e.attributes->'_usage'->>'credits_nano')::bigint
                            ELSE (e.content->0->>'credits_nano')::bigint END), 0)
     FROM sessions o JOIN session_events e ON e.session_id = o.id AND e.run_id = o.active_run_id
    WHERE o.project_id = ${projectId} AND o.active_run_id IS NOT NULL AND o.id <> ${sessionId}
      AND e.type IN ('session.turn_usage', 'session.compaction')
      AND e.seq > COALESCE((SELECT max(c.seq) FROM session_events c
                             WHERE c.session_id = o.id AND c.run_id = o.active_run_id
                               AND c.type IN ('session.status_idle', 'session.error')), 0))`;

/**
 * The project's balance less what its runs in flight have used and not yet been billed for
 * (all of them, or all but `exceptSession`'s): what the credit check of a run reckons with.
 */
export async function creditsAvailableNano(db: Queryable, projectId: string, exceptSession = ''): Promise<bigint> {
  const { rows } = await db.query<{ available: string | null }>({
    name: 'credits_available_v2',
    text: `SELECT (SELECT balance_nano FROM project_credits WHERE project_id = $1) - ${othersUnbilledSql('$1::text', '$2::text')} AS available`,
    values: [projectId, exceptSession],
  });
  return BigInt(rows[0]?.available ?? 0);
}

export async function loadRunContext(db: Queryable, sessionId: string, runId: string | null = null): Promise<RunContext> {
  // Session, agent, the latest compaction and the run's citations in one read; the events after the compaction in a second.
  const row = (
    await db.query<{
      session: RunContext['session'];
      agent: AgentRow;
      compaction: { seq: number; through: number | null; kept: number[] | null; summary: string | null; loaded: string[] | null } | null;
      run_citations: Citation[][];
      balance_nano: string | null;
      others_unbilled_nano: string | null;
    }>({
      name: 'run_context_v4',
      text: `SELECT json_build_object('id', s.id, 'project_id', s.project_id, 'reasoning_effort', s.reasoning_effort, 'client_id', s.client_id, 'active_run_id', s.active_run_id, 'deleted_at', s.deleted_at) AS session,
              json_build_object('id', a.id, 'model', a.model, 'system_prompt', a.system_prompt, 'temperature', a.temperature, 'max_tokens', a.max_tokens,
                                'reasoning_effort', a.reasoning_effort, 'tools', a.tools, 'settings', a.settings) AS agent,
              (SELECT json_build_object('seq', e.seq, 'through', e.attributes->'compacted_through_seq', 'kept', e.attributes->'_kept_seqs', 'summary', e.content->0->'text', 'loaded', e.attributes->'_loaded_tools')
                 FROM session_events e WHERE e.session_id = s.id AND e.type = 'session.compaction'
                ORDER BY e.created_at DESC, e.seq DESC LIMIT 1) AS compaction,
              (SELECT COALESCE(json_agg(e.attributes->'_citations' ORDER BY e.created_at, e.seq), '[]'::json)
                 FROM session_events e WHERE e.session_id = s.id AND e.run_id = $2 AND e.attributes ? '_citations') AS run_citations,
              (SELECT c.balance_nano::text FROM project_credits c WHERE c.project_id = s.project_id) AS balance_nano,
              ${othersUnbilledSql('s.project_id', 's.id')}::text AS others_unbilled_nano
         FROM sessions s JOIN agents a ON a.id = s.agent_id WHERE s.id = $1`,
      values: [sessionId, runId],
    })
  ).rows[0];
  if (!row) throw new Error(`session ${sessionId} not found`);
  const { session, agent, compaction, run_citations: runCitations } = row;
  const balanceNano = BigInt(row.balance_nano ?? 0);
  const othersUnbilledNano = BigInt(row.others_unbilled_nano ?? 0);
  const throughSeq = compaction ? Number(compaction.through ?? compaction.seq) : 0;
  // A compaction also keeps the messages it names below its cut (see compact.ts).
  const keptBelow = Array.isArray(compaction?.kept) ? compaction.kept.map(Number) : [];
  const events = (
    await db.query<EventRow>({
      name: 'run_context_events_v2',
      text: `SELECT ${EVENT_COLUMNS} FROM session_events WHERE session_id = $1 AND (seq > $2 OR seq = ANY($3::bigint[])) ORDER BY created_at, seq`,
      values: [sessionId, throughSeq, keptBelow],
    })
  ).rows;
  const summary = compaction ? (typeof compaction.summary === 'string' ? compaction.summary : '') : undefined;
  const summaryLoadedTools = Array.isArray(compaction?.loaded) ? compaction.loaded : undefined;
  return { session, agent, events, summary, ...(summaryLoadedTools ? { summaryLoadedTools } : {}), runCitations, balanceNano, othersUnbilledNano };
}

/**
 * The event log is what a run did. A run it has already ended (its closing event is there:
 * an operator reset the workflow to a point before that end) is not worked on again: no model
 * call, no new events after its end. The workflow then closes it, which finds nothing to close.
 */
export function assertRunHoldsSession(session: { active_run_id: string | null } | undefined, runId: string): void {
  if (session?.active_run_id !== runId) {
    throw ApplicationFailure.create({ type: 'run_interrupted', message: 'the run has already ended in the session log', nonRetryable: true });
  }
}

/**
 * Before a run's next step (a model turn, a tool, a compaction): the run still holds the
 * session, and the session was not deleted. A deleted session's run stops there even when the
 * delete's interrupt never reached the workflow. (A step already under way finishes and is kept.)
 */
export function assertRunMayStep(session: { active_run_id: string | null; deleted_at: string | null }, runId: string): void {
  assertRunHoldsSession(session, runId);
  if (session.deleted_at) throw ApplicationFailure.create({ type: 'run_interrupted', message: 'the session was deleted', nonRetryable: true });
}

/**
 * A message block as the model receives it: text, or a document. PDFs go to the provider as
 * files (the one file type all three read natively); a base64 file whose media type is text is
 * decoded and read as text; any other file, and a link, reach the model as text naming them (a
 * file type the provider refuses would fail this run and every later one of the session).
 */
function messagePart(block: Record<string, unknown>): TextPart | DocumentPart | undefined {
  if (block.type === 'text' && typeof block.text === 'string') return { type: 'text', text: block.text };
  if (block.type !== 'document') return undefined;
  const source = (block.source ?? {}) as { type?: string; media_type?: string; data?: string; url?: string };
  const described = { ...(typeof block.title === 'string' ? { title: block.title } : {}), ...(typeof block.context === 'string' ? { context: block.context } : {}) };
  if (source.type === 'url' && typeof source.url === 'string') return { type: 'document', source: { type: 'url', url: source.url }, ...described };
  if (source.type === 'base64' && typeof source.data === 'string' && source.media_type && !isTextMediaType(source.media_type)) {
    const mediaType = mediaTypeEssence(source.media_type);
    if (mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: mediaType, data: source.data }, ...described };
    return { type: 'text', text: documentAsText({ type: 'document', source: { type: 'base64', media_type: source.media_type, data: '' }, ...described }) };
  }
  const data = source.type === 'base64' ? base64Text(source.data ?? '', source.media_type) : String(source.data ?? '');
  return { type: 'document', source: { type: 'text', data }, ...described };
}

/**
 * A base64 text file's text in its charset (events are validated to be such text when they are
 * accepted; an older event that is not is read with U+FFFD in place of its bad bytes).
 */
function base64Text(data: string, mediaType: string | undefined): string {
  const read = readTextFile(data, mediaType ? charsetOf(mediaType) : undefined);
  return 'text' in read ? read.text : Buffer.from(data, 'base64').toString('utf8');
}

/** System instructions are text: a document among them is read as text (a file only named). */
const systemText = (block: Record<string, unknown>): string | undefined => {
  const part = messagePart(block);
  return part === undefined ? undefined : part.type === 'text' ? part.text : documentAsText(part);
};

export interface Conversation {
  system: TextPart[];
  messages: UnifiedMessage[];
  /** Deferred tools the gateway loaded (a `tool_loaded` result names them). */
  loadedTools: Set<string>;
}

/**
 * The log's events in the order the conversation took place. A message (user or system) joins the
 * conversation when a run claims it: one sent while another run was in flight sits in the log
 * among that run's events, but belongs before the start of the run that answers it. One no run
 * has claimed yet (queued behind the run in flight; unprocessed, though the api has already
 * named its run) is not part of the conversation so far.
 */
export function inConversationOrder(events: EventRow[]): EventRow[] {
  const runStart = new Map<string, number>();
  events.forEach((event, index) => {
    if (event.type === 'session.status_running' && event.run_id && !runStart.has(event.run_id)) runStart.set(event.run_id, index);
  });
  const ordered: EventRow[] = [];
  const waiting = new Map<string, EventRow[]>();
  events.forEach((event, index) => {
    if (event.type === 'session.status_running' && event.run_id && runStart.get(event.run_id) === index) ordered.push(...(waiting.get(event.run_id) ?? []));
    // Messages, user and system alike, join when their run claims them.
    if (event.type !== 'user.message' && event.type !== 'system.message') return void ordered.push(event);
    if (!event.processed_at || !event.run_id) return; // queued: no run has claimed it yet
    const start = runStart.get(event.run_id);
    if (start !== undefined && start > index) waiting.set(event.run_id, [...(waiting.get(event.run_id) ?? []), event]);
    else ordered.push(event);
  });
  return ordered;
}

/** Turns the event log into provider-neutral messages (consecutive turns of one role merged). */
export function buildConversation(context: Pick<RunContext, 'agent' | 'summary' | 'summaryLoadedTools' | 'events'>): Conversation {
  const system: TextPart[] = context.agent.system_prompt ? [{ type: 'text', text: context.agent.system_prompt }] : [];
  const messages: UnifiedMessage[] = [];
  const loadedTools = new Set<string>(context.summaryLoadedTools ?? []);
  const toolNames = new Map<string, string>();
  const answered = new Set<string>();

  // A turn's signed thinking goes back to the model that signed it (Anthropic continues a tool
  // loop with thinking on only then); other models read the answer alone.
  const signedThinking = (event: EventRow): AssistantPart[] => {
    const thinking = event.attributes?._thinking as { model?: string; blocks?: AssistantPart[] } | undefined;
    return thinking?.model === context.agent.model && Array.isArray(thinking.blocks) ? thinking.blocks : [];
  };
  const push = (role: 'user' | 'assistant', parts: Array<UserPart | AssistantPart>) => {
    if (parts.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) (last.content as Array<UserPart | AssistantPart>).push(...parts);
    else messages.push({ role, content: parts } as UnifiedMessage);
  };

  if (context.summary) push('user', [{ type: 'text', text: `Summary of the earlier conversation:\n${context.summary}` }]);

  for (const event of inConversationOrder(context.events)) {
    const blocks = event.content as Array<Record<string, unknown>>;
    switch (event.type) {
      case 'user.message':
        push('user', blocks.map(messagePart).filter((part): part is TextPart | DocumentPart => part !== undefined));
        break;
      case 'system.message':
        system.push(...blocks.map(systemText).filter((t): t is string => t !== undefined).map((text) => ({ type: 'text' as const, text })));
        break;
      case 'agent.message':
        push('assistant', [...signedThinking(event), ...blocks.filter((b) => b.type === 'text').map((b) => ({ type: 'text' as const, text: String(b.text ?? '') }))]);
        break;
      case 'agent.tool_use': {
        for (const b of blocks) toolNames.set(String(b.id), String(b.name));
        const signatures = (event.attributes?._thought_signatures ?? {}) as Record<string, string>;
        push('assistant', signedThinking(event));
        push(
          'assistant',
          blocks.map((b) => ({
            type: 'tool-call',
            id: String(b.id),
            name: String(b.name),
            input: (b.input ?? {}) as Record<string, unknown>,
            ...(typeof signatures[String(b.id)] === 'string' ? { signature: signatures[String(b.id)] } : {}),
          })),
        );
        break;
      }
      case 'user.tool_result':
        push(
          'user',
          blocks.map((b) => {
            const id = String(b.tool_use_id);
            answered.add(id);
            if (b.status === 'tool_loaded' && toolNames.has(id)) loadedTools.add(toolNames.get(id)!);
            const content = typeof b.content === 'string' ? b.content : JSON.stringify(b.content ?? '');
            return { type: 'tool-result', tool_use_id: id, content, is_error: b.is_error === true };
          }),
        );
        break;
      default:
        break;
    }
  }

  // A call left without a result (an interrupted run) gets a synthetic one, so every
  // provider accepts the history.
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role !== 'assistant') continue;
    const missing = message.content.filter((p) => p.type === 'tool-call' && !answered.has(p.id)) as Array<{ id: string }>;
    if (missing.length === 0) continue;
    const results: UserPart[] = missing.map((p) => ({ type: 'tool-result', tool_use_id: p.id, content: 'cancelled', is_error: true }));
    const next = messages[i + 1];
    if (next && next.role === 'user') next.content.unshift(...results);
    else messages.splice(i + 1, 0, { role: 'user', content: results });
  }
  // Thinking matters only to the tool loop in progress (the turns since the last message that is
  // not just tool results): earlier turns' thinking would only fill the window.
  // (A turn that only thought, cut short by max_tokens, leaves no message then.)
  let loopStart = 0;
  messages.forEach((m, i) => {
    if (m.role === 'user' && m.content.some((p) => p.type !== 'tool-result')) loopStart = i;
  });
  const earlier = messages.splice(0, loopStart);
  const kept = earlier.map((m) => (m.role === 'assistant' ? { ...m, content: m.content.filter((p) => p.type !== 'reasoning' && p.type !== 'redacted-reasoning') } : m));
  const conversation: UnifiedMessage[] = [];
  for (const message of [...kept, ...messages]) {
    const last = conversation[conversation.length - 1];
    if (message.content.length === 0) continue;
    if (last && last.role === message.role) (last.content as Array<UserPart | AssistantPart>).push(...message.content);
    else conversation.push(message);
  }
  if (conversation[0]?.role === 'assistant') conversation.unshift({ role: 'user', content: [{ type: 'text', text: '(conversation continues)' }] });
  return { system, messages: conversation, loadedTools };
}
