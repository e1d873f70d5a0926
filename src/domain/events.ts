import { z } from 'zod';
import { Base64Text, charsetOf, MediaType, pageLimit, queryBoolean, unreadableTextFile } from './fields';

/**
 * The session event log: what callers may send, and the state rules that decide what a
 * request appends and how the session's run state changes. Pure; the events route applies
 * the plan inside one transaction holding the session row lock.
 */
export const EVENT_LIMITS = { eventsPerRequest: 100, blocksPerEvent: 100, toolUseIdChars: 256 } as const;

export const SENDABLE_EVENT_TYPES = ['user.message', 'system.message', 'user.tool_result', 'user.interrupt'] as const;
/** Event types of other products' APIs that this gateway refuses by name. */
export const REJECTED_EVENT_TYPES = ['user.tool_confirmation', 'user.custom_tool_result', 'user.define_outcome'] as const;

export const TOOL_ERROR_CODES = [
  'invalid_input',
  'permission_denied',
  'not_found',
  'tool_unavailable',
  'declined',
  'cancelled',
  'rate_limited',
  'timeout',
  'unavailable',
  'cms_fatal_error',
  'execution_failed',
  'internal_error',
] as const;
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];
/** Event-level code of a failed tool result whose block gave none. */
export const UNCLASSIFIED = 'unclassified';

// ---------------------------------------------------------------- content blocks

const TextBlockSchema = z.strictObject({ type: z.literal('text'), text: z.string({ error: 'must be a string' }) });

const DocumentSourceSchema = z.discriminatedUnion(
  'type',
  [
    z
      .strictObject({ type: z.literal('base64'), media_type: MediaType, data: Base64Text })
      .superRefine((source, ctx) => {
        // A text file is read as text when the run builds the model's context: it must be text in its charset.
        const problem = unreadableTextFile(source.media_type, source.data, charsetOf(source.media_type));
        if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['data'] });
      }),
    z.strictObject({ type: z.literal('text'), media_type: z.literal('text/plain').optional(), data: z.string() }),
    z.strictObject({ type: z.literal('url'), url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }) }),
  ],
  { error: "source.type must be 'base64', 'text' or 'url'" },
);
const DocumentBlockSchema = z.strictObject({
  type: z.literal('document'),
  source: DocumentSourceSchema,
  title: z.string().optional(),
  context: z.string().optional(),
});

const MessageBlockSchema = z.discriminatedUnion('type', [TextBlockSchema, DocumentBlockSchema], {
  error: "message content blocks must be of type 'text' or 'document'",
});

/** The JSON error envelope a failed tool result may carry as its content. */
export const ToolErrorEnvelopeSchema = z.strictObject({
  error: z.strictObject({
    code: z.string().min(1),
    message: z.string(),
    field: z.string().optional(),
    retryable: z.boolean(),
  }),
});

/** W3C trace context `traceparent`: version-traceid-parentid-flags, lowercase hex. */
export const TRACEPARENT_PATTERN = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export const ToolResultBlockSchema = z
  .strictObject({
    type: z.literal('tool_result', { error: "tool result blocks must have type 'tool_result'" }),
    tool_use_id: z.string({ error: 'is required' }).min(1, 'is required').max(EVENT_LIMITS.toolUseIdChars, `must be at most ${EVENT_LIMITS.toolUseIdChars} characters`),
    content: z.union([z.string(), ToolErrorEnvelopeSchema], { error: 'must be a string or the JSON error envelope {error: {code, message, field?, retryable}}' }).optional(),
    // Stored on every result (the spec lists it among a result's fields): absent means false.
    is_error: z.boolean().default(false),
    // `unclassified` too: the code the gateway stores on a failed result sent without one, so a
    // block read back from the history is accepted as it is.
    error_code: z.enum([...TOOL_ERROR_CODES, UNCLASSIFIED], { error: `must be one of ${TOOL_ERROR_CODES.join(', ')} (or ${UNCLASSIFIED})` }).optional(),
    traceparent: z.string().regex(TRACEPARENT_PATTERN, 'must be a W3C traceparent').optional(),
    client_timing: z
      .strictObject({ started_at_ms: z.number().int().min(0), ended_at_ms: z.number().int().min(0) })
      .refine((t) => t.ended_at_ms >= t.started_at_ms, 'ended_at_ms must not be before started_at_ms')
      .optional(),
  })
  .refine((block) => block.error_code === undefined || block.is_error === true, {
    message: 'error_code is allowed only when is_error is true',
    path: ['error_code'],
  })
  // A failed result always says why, as the event's own error_code does: `unclassified` when
  // the client gave no code.
  .transform((block) => (block.is_error && block.error_code === undefined ? { ...block, error_code: UNCLASSIFIED } : block));
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>;

const blocks = <T extends z.ZodType>(block: T) => z.array(block).max(EVENT_LIMITS.blocksPerEvent, `must have at most ${EVENT_LIMITS.blocksPerEvent} blocks`);

const MessageEventSchema = z.strictObject({
  type: z.enum(['user.message', 'system.message']),
  content: blocks(MessageBlockSchema).min(1, 'must have at least one block'),
});
const ToolResultEventSchema = z.strictObject({
  type: z.literal('user.tool_result'),
  content: blocks(ToolResultBlockSchema).min(1, 'must have at least one tool_result block'),
});
const InterruptEventSchema = z.strictObject({
  type: z.literal('user.interrupt'),
  content: z.array(z.unknown()).max(0, 'must be empty or omitted').optional(),
});

const SentEventSchema = z
  .looseObject({ type: z.string({ error: 'is required' }) })
  .superRefine((event, ctx) => {
    if ((REJECTED_EVENT_TYPES as readonly string[]).includes(event.type)) {
      ctx.addIssue({ code: 'custom', path: ['type'], message: `'${event.type}' events are not supported` });
    } else if (!(SENDABLE_EVENT_TYPES as readonly string[]).includes(event.type)) {
      ctx.addIssue({ code: 'custom', path: ['type'], message: `must be one of ${SENDABLE_EVENT_TYPES.join(', ')}` });
    }
  })
  .pipe(z.discriminatedUnion('type', [MessageEventSchema, ToolResultEventSchema, InterruptEventSchema]));
export type SentEvent = z.infer<typeof SentEventSchema>;

export const PostEventsSchema = z.strictObject({
  events: z
    .array(SentEventSchema, { error: 'must be an array of events' })
    .min(1, 'must have at least one event')
    .max(EVENT_LIMITS.eventsPerRequest, `must have at most ${EVENT_LIMITS.eventsPerRequest} events`)
    .superRefine((events, ctx) => {
      const types = new Set(events.map((e) => e.type));
      if (types.has('user.interrupt') && events.length > 1) {
        ctx.addIssue({ code: 'custom', message: 'user.interrupt must be the only event in its request' });
      } else if (types.has('user.tool_result') && (types.has('user.message') || types.has('system.message'))) {
        ctx.addIssue({ code: 'custom', message: 'a request holds either user.tool_result events or messages, never both' });
      }
    }),
});
export type PostEvents = z.infer<typeof PostEventsSchema>;

export const EventListQuerySchema = z
  .strictObject({
    limit: pageLimit,
    order: z.enum(['asc', 'desc'], { error: 'must be asc or desc' }).default('asc'),
    page: z.string().min(1).max(512).optional(),
    after_id: z.string().min(1).max(64).optional(),
    include_thinking: queryBoolean.default(false),
  })
  .refine((q) => !(q.page && q.after_id), { message: 'after_id and page are mutually exclusive', path: ['after_id'] });
export type EventListQuery = z.infer<typeof EventListQuerySchema>;

// ---------------------------------------------------------------- state rules

export interface RunState {
  active_run_id: string | null;
  pending_tool_use_ids: string[];
  cancelled_tool_use_ids: string[];
}

/** An event to append (the store's NewEvent shape). */
export interface EventDraft {
  type: string;
  content: unknown[];
  error_code?: string | null;
  run_id?: string | null;
  processed?: boolean;
}

export type EventPlan =
  | { ok: false; status: 400 | 409; message: string }
  | {
      ok: true;
      append: EventDraft[];
      state: RunState;
      /** A new run was claimed: the session becomes `running` with this run id. */
      startedRunId?: string;
      /** What to signal after commit: wake the workflow, interrupt a run, or nothing. */
      signal: { kind: 'events' } | { kind: 'interrupt'; runId: string } | null;
      /** Whether the request needs credits (it can make a run do model calls). */
      runStarting: boolean;
    };

/** Why outstanding client tool calls were answered as cancelled (the model reads this). */
export const CANCELLED_BECAUSE = {
  message: 'a new message was sent before its result',
  runEnded: 'its run ended (interrupted, abandoned or cancelled) before its result arrived',
} as const;

/**
 * The synthetic `user.tool_result` events answering outstanding calls as cancelled, one per
 * call: a conversation must hold a result for every tool call before anything else follows.
 */
export function cancelledResults(toolUseIds: string[], because: string): EventDraft[] {
  const content = JSON.stringify({ error: { code: 'cancelled', message: `the tool call was cancelled because ${because}`, retryable: false } });
  return toolUseIds.map((id) => ({
    type: 'user.tool_result',
    content: [{ type: 'tool_result', tool_use_id: id, is_error: true, error_code: 'cancelled', content }],
    error_code: 'cancelled',
    processed: true,
  }));
}

/** First failing block's code; `unclassified` when it gave none; null when nothing failed. */
export function toolResultErrorCode(content: ReadonlyArray<{ type?: string; tool_use_id?: string; is_error?: boolean; error_code?: string }>): string | null {
  const failed = content.find((block) => block.is_error === true);
  return failed ? (failed.error_code ?? UNCLASSIFIED) : null;
}

/**
 * Applies the spec's run-behaviour rules to one request. `newRunId` is the id a run
 * started by this request gets; `asyncEnabled` is the site's switch (when off, events are
 * stored and echoed but nothing runs).
 */
export function planEvents(state: RunState, events: SentEvent[], options: { newRunId: string; asyncEnabled: boolean }): EventPlan {
  const first = events[0]!;
  if (first.type === 'user.interrupt') {
    // Interrupting a paused run cancels its outstanding calls: a result sent after the
    // interrupt is refused (409) like any cancelled call's, rather than accepted for a run
    // that is ending. The calls stay pending until the next message answers them as cancelled.
    const paused = state.active_run_id !== null && state.pending_tool_use_ids.length > 0;
    return {
      ok: true,
      append: [{ type: 'user.interrupt', content: [], run_id: state.active_run_id }],
      state: paused ? { ...state, cancelled_tool_use_ids: union(state.cancelled_tool_use_ids, state.pending_tool_use_ids) } : state,
      signal: state.active_run_id ? { kind: 'interrupt', runId: state.active_run_id } : null,
      runStarting: false,
    };
  }

  if (first.type === 'user.tool_result') {
    const pending = new Set(state.pending_tool_use_ids);
    const cancelled = new Set(state.cancelled_tool_use_ids);
    const append: EventDraft[] = [];
    for (const event of events as Array<Extract<SentEvent, { type: 'user.tool_result' }>>) {
      for (const block of event.content) {
        if (cancelled.has(block.tool_use_id)) {
          return { ok: false, status: 409, message: `tool use '${block.tool_use_id}' was already cancelled; its result is no longer accepted` };
        }
        if (!pending.has(block.tool_use_id)) {
          // A run in flight shows its agent.tool_use before it pauses (its server tools run
          // first): results are taken from the pause on, which the message says.
          const inFlight = state.active_run_id !== null && state.pending_tool_use_ids.length === 0;
          // (Or its result already came, and resumed the run: the message names both.)
          const when = inFlight ? ' (already answered, or the run has not paused for it yet: results are taken once the run pauses, session.status_idle with stop_reason client_tool_use)' : '';
          return { ok: false, status: 400, message: `tool use '${block.tool_use_id}' is not awaiting a result${when}` };
        }
        pending.delete(block.tool_use_id);
      }
      append.push({ type: 'user.tool_result', content: event.content, error_code: toolResultErrorCode(event.content), run_id: state.active_run_id });
    }
    return {
      ok: true,
      append,
      state: { ...state, pending_tool_use_ids: state.pending_tool_use_ids.filter((id) => pending.has(id)) },
      signal: options.asyncEnabled ? { kind: 'events' } : null,
      runStarting: true,
    };
  }

  // Messages. A paused run refuses them until its results are in; once an interrupt has
  // cancelled its calls (the run is ending), a message waits for its own run.
  const awaited = state.pending_tool_use_ids.filter((id) => !state.cancelled_tool_use_ids.includes(id));
  if (awaited.length > 0 && state.active_run_id) {
    return { ok: false, status: 400, message: 'the run is paused waiting for client tool results; send the tool result first' };
  }
  const append: EventDraft[] = [];
  let next = state;
  if (state.pending_tool_use_ids.length > 0 && !state.active_run_id) {
    // A pause nobody holds any more: its calls are answered as cancelled before the message.
    append.push(...cancelledResults(state.pending_tool_use_ids, CANCELLED_BECAUSE.message));
    next = { ...state, pending_tool_use_ids: [], cancelled_tool_use_ids: union(state.cancelled_tool_use_ids, state.pending_tool_use_ids) };
  }
  const hasUserMessage = events.some((event) => event.type === 'user.message');
  // A request with a user.message is answered by a run of its own, named now: the run it starts,
  // or, while another run holds the session, the run that starts once that one ends. Its
  // events carry that run id, so a run takes exactly its own request's messages (never one
  // sent after them) and each request gets its reply.
  const runId = hasUserMessage && options.asyncEnabled ? options.newRunId : null;
  for (const event of events) append.push({ type: event.type, content: event.content ?? [], run_id: runId });

  const startsRun = runId !== null && !next.active_run_id;
  if (startsRun) next = { ...next, active_run_id: options.newRunId };
  return {
    ok: true,
    append,
    state: next,
    ...(startsRun ? { startedRunId: options.newRunId } : {}),
    signal: hasUserMessage && options.asyncEnabled ? { kind: 'events' } : null,
    runStarting: hasUserMessage,
  };
}

export const union = (a: string[], b: string[]): string[] => [...new Set([...a, ...b])];
