import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { storable } from '../src/domain/storable-text';
import type { Deps } from '../src/deps';
import {
  anthropicMaxTokens,
  ContextWindowExceededError,
  findModel,
  UpstreamHttpError,
  type ModelRecord,
  type ProviderRegistry,
  type ReasoningPart,
  type RedactedReasoningPart,
  type StreamPart,
  type UnifiedRequest,
  type Usage,
} from '../src/providers';
import { estimateRequestTokens } from '../src/providers/tokens';
import { modelTools, roleOf, validateToolInput, type RunToolEntry as ToolEntry } from '../src/domain/run-tools';
import { reasoningEffortError } from '../src/domain/agents';
import { creditsExhaustedForRun, zeroUsage, type RunUsage, type TurnOutcome } from '../src/domain/run';
import { retryWhileDatabaseUnavailable, withTransaction } from '../src/store/db';
import { appendEvents, EVENT_COLUMNS, lockSession, type EventRow } from '../src/store/events';
import { assertRunHoldsSession, assertRunMayStep, buildConversation, loadRunContext, type Citation, type Conversation, type RunContext } from './run-context';
import { heartbeating } from './heartbeat';
import { recordBrokenAttempt } from '../src/store/attempt-usage';
import { pricedUsage, turnUsageOf } from './priced-usage';

/** How long a model turn's answer waits for Postgres to take it (an outage, a restart). */
const TURN_WRITE_RETRY_MS = 60_000;

/**
 * Output tokens reserved when deciding whether a prompt fits the context window: the turn's
 * cap, but never more than half the window, so a cap as large as the window (a model whose
 * output may fill it) still leaves the prompt room. The turn is then sent with what is left.
 */
export const outputReserve = (model: ModelRecord, maxTokens: number | null) => Math.min(maxTokens ?? 1024, model.max_output_tokens, Math.floor(model.context_window / 2));

/** Provider failures become ApplicationFailures whose type is the run error code. */
export function toRunFailure(error: unknown): Error {
  if (error instanceof CancelledFailure || (error as Error)?.name === 'AbortError') return error as Error;
  if (error instanceof UpstreamHttpError) {
    const type = error.status === 429 ? 'rate_limit_error' : 'upstream_error';
    const message = `${error.provider} answered ${error.status}`;
    if (!error.retryable) return ApplicationFailure.create({ type, message, nonRetryable: true });
    return ApplicationFailure.create({ type, message, nextRetryDelay: error.retryAfterMs });
  }
  const name = (error as Error)?.name ?? '';
  if (name === 'UpstreamTimeoutError') return ApplicationFailure.create({ type: 'upstream_timeout', message: 'the provider did not answer in time' });
  if (name === 'UpstreamConnectionError' || name === 'ProviderError') return ApplicationFailure.create({ type: 'upstream_error', message: 'the provider could not be reached' });
  return ApplicationFailure.create({ type: 'internal_error', message: 'internal error', nonRetryable: true, cause: error as Error });
}

/** A provider stream that broke after it began, with what it had used by then and whether the model had produced anything. */
class BrokenStream extends Error {
  constructor(
    readonly failure: Error,
    readonly usage: Usage,
    readonly produced: boolean,
  ) {
    super(failure.message);
  }
}

export function runRequest(context: RunContext, model: ModelRecord, conversation: Conversation = buildConversation(context)): UnifiedRequest {
  const kbEnabled = context.agent.settings?.disable_kb_rag !== true;
  const tools = modelTools(context.agent.tools ?? [], conversation.loadedTools, { kbEnabled });
  const effort = reasoningEffortFor(context, model);
  return {
    model,
    system: conversation.system,
    messages: conversation.messages,
    ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: 'function' as const, ...tool })) } : {}),
    // An agent's cap is checked only against the catalog-wide maximum (its model may change
    // later): the provider gets at most what this model can produce.
    ...(context.agent.max_tokens ? { max_tokens: Math.min(context.agent.max_tokens, model.max_output_tokens) } : {}),
    ...(context.agent.temperature !== null && context.agent.temperature !== undefined ? { temperature: context.agent.temperature } : {}),
    ...(effort ? { reasoning_effort: effort } : {}),
  };
}

/**
 * The session's override, then the agent's, then the provider's default. A session override
 * the agent's current model does not accept (the agent changed model after the session set
 * it) is passed over, as the agent's own value is cleared on such a change.
 */
function reasoningEffortFor(context: RunContext, model: ModelRecord): string | undefined {
  const session = context.session.reasoning_effort;
  if (session && !reasoningEffortError(model.id, session)) return session;
  return context.agent.reasoning_effort ?? undefined;
}

interface Assembled {
  text: string;
  reasoning: string;
  /**
   * The turn's thinking as the provider must get it back (Anthropic: signed and redacted blocks,
   * in order), when every block came signed: a tool loop continues with thinking on only when
   * its assistant turn starts with them.
   */
  thinkingBlocks?: Array<ReasoningPart | RedactedReasoningPart>;
  thinkingMs?: number;
  toolCalls: Array<{ id: string; name: string; input: Record<string, unknown>; signature?: string }>;
  finish: 'stop' | 'length' | 'tool-calls' | 'context-window' | 'other';
  usage: Usage;
}

/** Reads a provider stream into one turn; the time until the first answer token is the thinking time. */
async function assemble(parts: AsyncIterable<StreamPart>, started: number): Promise<Assembled> {
  const out: Assembled = { text: '', reasoning: '', toolCalls: [], finish: 'other', usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, reasoning_tokens: 0 } };
  let sawToolInput = false;
  const blocks: Array<ReasoningPart | RedactedReasoningPart> = [];
  let open: ReasoningPart | undefined; // the thinking block being streamed, until its signature
  for await (const part of parts) {
    Context.current().heartbeat();
    if (part.type === 'reasoning-delta') {
      out.reasoning += part.delta;
      if (!open) blocks.push((open = { type: 'reasoning', text: '' }));
      open.text += part.delta;
    } else if (part.type === 'reasoning-signature') {
      // (A signed block may come without thinking text.)
      if (open) open.signature = part.signature;
      else blocks.push({ type: 'reasoning', text: '', signature: part.signature });
      open = undefined;
    } else if (part.type === 'redacted-reasoning') {
      open = undefined;
      blocks.push({ type: 'redacted-reasoning', data: part.data });
    }
    else if (part.type === 'text-delta') {
      open = undefined;
      if (out.reasoning && out.thinkingMs === undefined) out.thinkingMs = Date.now() - started;
      out.text += part.delta;
    } else if (part.type === 'tool-call') out.toolCalls.push({ id: part.id, name: part.name, input: part.input, ...(part.signature ? { signature: part.signature } : {}) });
    else if (part.type === 'finish') {
      out.usage = part.usage;
      const unified = part.finish_reason.unified;
      out.finish = unified === 'stop' || unified === 'stop-sequence' ? 'stop' : unified === 'length' ? 'length' : unified === 'tool-calls' ? 'tool-calls' : unified === 'context-window' ? 'context-window' : 'other';
    } else if (part.type === 'error') throw new BrokenStream(part.error, part.usage, out.text !== '' || out.reasoning !== '' || out.toolCalls.length > 0 || sawToolInput);
    if (part.type === 'tool-input-delta') sawToolInput = true;
  }
  if (out.reasoning && out.thinkingMs === undefined) out.thinkingMs = Date.now() - started;
  if (blocks.length > 0 && blocks.every((block) => block.type === 'redacted-reasoning' || block.signature)) out.thinkingBlocks = blocks;
  return out;
}

export function createCallModelActivities(deps: Deps, providers: ProviderRegistry) {
  return {
    /**
     * One model turn: reads the context from Postgres, calls the model, appends
     * `agent.message`, `agent.tool_use` and `session.turn_usage`. A retried activity finds
     * the turn already recorded and returns it without calling the model again.
     */
    async callModel(input: { sessionId: string; runId: string; turn: number; cycleKey: string; unbilledCreditsNano?: number }): Promise<TurnOutcome> {
      const keyPrefix = `${input.runId}:turn:${input.turn}`;
      const context = await loadRunContext(deps.db, input.sessionId, input.runId);
      const model = findModel(context.agent.model);
      if (!model) throw ApplicationFailure.create({ type: 'internal_error', message: `unknown model ${context.agent.model}`, nonRetryable: true });
      const recorded = await recordedTurn(deps, input.sessionId, keyPrefix);
      const conversation = buildConversation(context);
      if (recorded) return classify(context.agent.tools ?? [], recorded.toolCalls, recorded.stop, recorded.usage, recorded.contextTokens, conversation.loadedTools);
      assertRunMayStep(context.session, input.runId);
      // The balance less what this run and the project's other runs in flight have not been billed for yet.
      if (creditsExhaustedForRun(context.balanceNano - context.othersUnbilledNano, input.unbilledCreditsNano ?? 0)) {
        throw ApplicationFailure.create({ type: 'rate_limit_error', message: 'the project credit balance is exhausted', nonRetryable: true });
      }

      const request = runRequest(context, model, conversation);
      const promptTokens = estimateRequestTokens(request);
      if (promptTokens + outputReserve(model, context.agent.max_tokens) > model.context_window) {
        return { stop: 'end_turn', serverToolCalls: [], clientToolCalls: [], usage: zeroUsage(), contextTokens: 0, needsCompaction: true };
      }
      // Prompt and answer share the window: a cap past what the prompt leaves is lowered to it,
      // the one a provider applies when none is given included (Anthropic requires one).
      const cap = request.max_tokens ?? (model.provider === 'anthropic' ? anthropicMaxTokens(request) : undefined);
      if (cap !== undefined && promptTokens + cap > model.context_window) request.max_tokens = model.context_window - promptTokens;
      /** A call whose output will not be in the log, billed by the run's close (activities/run-cycle.ts). */
      const recordAttempt = (usage: RunUsage) => {
        // Keyed by the scheduling too: attempt numbers start again when a reset schedules the turn anew.
        const { activityId, attempt, workflowExecution } = Context.current().info;
        return recordBrokenAttempt(deps.db, input.sessionId, input.runId, `${keyPrefix}:${workflowExecution?.runId ?? '-'}:${activityId}:attempt:${attempt}`, usage);
      };
      let turn: Assembled;
      const started = Date.now();
      try {
        turn = await heartbeating(async (signal) => assemble(await providers.stream(request, { signal }), started));
      } catch (error) {
        if (error instanceof ContextWindowExceededError) {
          return { stop: 'end_turn', serverToolCalls: [], clientToolCalls: [], usage: zeroUsage(), contextTokens: 0, needsCompaction: true };
        }
        // A call whose stream broke (or was cancelled) after the model produced output: the
        // provider bills it, so the run does, when it closes, whatever happens to it next.
        if (error instanceof BrokenStream && error.produced) await recordAttempt(pricedUsage(model, error.usage));
        if (Context.current().cancellationSignal.aborted) throw new CancelledFailure('interrupted');
        throw toRunFailure(error instanceof BrokenStream ? error.failure : error);
      }

      const usage = pricedUsage(model, turn.usage);
      try {
        // As the log will hold it (a retried turn reads it back from there): storable text only.
        // Thinking whose text had to change no longer matches its signature: it is not sent back.
        const stored = storable(turn);
        turn = stored.reasoning === turn.reasoning ? stored : { ...stored, thinkingBlocks: undefined };
      } catch (error) {
        // (Output nested too deep to copy: the call was made and is billed, the run cannot go on.)
        await recordAttempt(usage).catch(() => undefined);
        throw toRunFailure(error);
      }
      const credits = usage.credits_nano;
      const totalTokens = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens + usage.output_tokens;
      const stop: TurnOutcome['stop'] =
        turn.toolCalls.length > 0 ? 'tool_use' : turn.finish === 'length' ? 'max_tokens' : turn.finish === 'context-window' ? 'model_context_window_exceeded' : 'end_turn';

      try {
        // A Postgres outage here would fail the activity, and its retry would call the model
        // again (billed twice, or the run failed): the append is idempotent (its keys), so it is
        // tried again for a while first.
        await heartbeating((signal) => retryWhileDatabaseUnavailable(() => withTransaction(deps.db, async (client) => {
          // Checked again under the lock: the run may have been closed while the model answered
          // (its workflow was terminated, and the session's next execution closed it).
          assertRunHoldsSession(await lockSession(client, input.sessionId), input.runId);
          const events = [];
          const blocks: unknown[] = [];
          if (turn.reasoning) blocks.push({ type: 'thought', text: turn.reasoning, extra_content: { gateway: { thinking_ms: turn.thinkingMs ?? 0 } } });
          if (turn.text) {
            const citations = distinctCitations(context.runCitations);
            blocks.push({ type: 'text', text: turn.text, ...(citations.length > 0 ? { citations } : {}) });
          }
          // Anthropic's signed thinking, kept internal with the model that signed it (only that model
          // takes it back): on the turn's message, or on its tool calls when the thinking was all
          // redacted (no thought text, so no message).
          const thinking = turn.thinkingBlocks && model.provider === 'anthropic' ? { _thinking: { model: model.id, blocks: turn.thinkingBlocks } } : undefined;
          if (blocks.length > 0) {
            events.push({
              type: 'agent.message',
              content: blocks,
              ...(thinking ? { attributes: thinking } : {}),
              run_id: input.runId,
              idempotency_key: `${keyPrefix}:message`,
              processed: true,
            });
          }
          if (turn.toolCalls.length > 0) {
            // Gemini's thought signatures go back with their calls on later turns; kept internal.
            const signatures = Object.fromEntries(turn.toolCalls.flatMap((call) => (call.signature ? [[call.id, call.signature]] : [])));
            const attributes = { ...(Object.keys(signatures).length > 0 ? { _thought_signatures: signatures } : {}), ...(thinking && blocks.length === 0 ? thinking : {}) };
            events.push({
              type: 'agent.tool_use',
              content: turn.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.input })),
              ...(Object.keys(attributes).length > 0 ? { attributes } : {}),
              run_id: input.runId,
              idempotency_key: `${keyPrefix}:tool_use`,
              processed: true,
            });
          }
          events.push({
            type: 'session.turn_usage',
            content: [
              {
                turn: input.turn,
                model: model.id,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cache_read_input_tokens: usage.cache_read_input_tokens,
                cache_creation_input_tokens: usage.cache_creation_input_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                total_tokens: totalTokens,
                credits_nano: credits,
              },
            ],
            attributes: { stop, context_tokens: totalTokens },
            run_id: input.runId,
            idempotency_key: `${keyPrefix}:usage`,
            processed: true,
          });
          await appendEvents(client, input.sessionId, events);
        }), { forMs: TURN_WRITE_RETRY_MS, signal }));
      } catch (error) {
        // The provider answered (and bills the call) but the turn is not in the log: billed as an
        // attempt, as a broken call is, before the activity fails (or is retried: a new call).
        // Unless the commit did land and only its acknowledgement was lost. (A database that
        // refused the append may refuse these too: the original error is the one to report.)
        const landed = await recordedTurn(deps, input.sessionId, keyPrefix).catch(() => undefined);
        if (!landed) await recordAttempt(usage).catch(() => undefined);
        throw error;
      }
      return classify(context.agent.tools ?? [], turn.toolCalls, stop, usage, totalTokens, conversation.loadedTools);
    },
  };
}

/** Client calls pause the run; everything else (including loading or rejecting a deferred call) the gateway answers. */
function classify(
  tools: ToolEntry[],
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>,
  stop: TurnOutcome['stop'],
  usage: RunUsage,
  contextTokens: number,
  loaded: Set<string>,
): TurnOutcome {
  const serverToolCalls: TurnOutcome['serverToolCalls'] = [];
  const clientToolCalls: TurnOutcome['clientToolCalls'] = [];
  for (const call of calls) {
    const role = roleOf(tools, call.name);
    const clientSide =
      role.kind === 'client' ||
      (role.kind === 'deferred' && loaded.has(call.name) && !validateToolInput(role.entry.input_schema ?? { type: 'object' }, call.input));
    if (clientSide) clientToolCalls.push({ id: call.id, name: call.name });
    else serverToolCalls.push(call);
  }
  return { stop, serverToolCalls, clientToolCalls, usage, contextTokens };
}

/**
 * A knowledge-base-grounded answer cites the documents the run's knowledge-base tools
 * returned (deduplicated by URI, in the order they were retrieved).
 */
/**
 * Each document the run retrieved, cited once: keyed by its link and its title together, as
 * documents may share a link (one page in several languages, or a site's FAQ entries) and each
 * must be cited under its own title.
 */
function distinctCitations(perResult: Citation[][]): Citation[] {
  const seen = new Map<string, Citation>();
  for (const citations of perResult) {
    for (const citation of citations) {
      const key = JSON.stringify([citation.document_uri, citation.document_title]);
      if (!seen.has(key)) seen.set(key, citation);
    }
  }
  return [...seen.values()];
}

/** The turn as already recorded by an earlier attempt of this activity, if any. */
async function recordedTurn(deps: Deps, sessionId: string, keyPrefix: string) {
  const { rows } = await deps.db.query<EventRow & { idempotency_key: string }>(
    `SELECT ${EVENT_COLUMNS}, idempotency_key FROM session_events WHERE session_id = $1 AND idempotency_key = ANY($2)`,
    [sessionId, [`${keyPrefix}:tool_use`, `${keyPrefix}:usage`]],
  );
  const usageRow = rows.find((row) => row.idempotency_key.endsWith(':usage'));
  if (!usageRow) return undefined;
  const block = usageRow.content[0] as Record<string, unknown>;
  const toolRow = rows.find((row) => row.idempotency_key.endsWith(':tool_use'));
  const toolCalls = ((toolRow?.content ?? []) as Array<{ id: string; name: string; input: Record<string, unknown> }>).map(({ id, name, input }) => ({ id, name, input }));
  return {
    toolCalls,
    stop: (usageRow.attributes as { stop: TurnOutcome['stop'] }).stop,
    usage: turnUsageOf(block),
    contextTokens: Number(block.total_tokens),
  };
}
