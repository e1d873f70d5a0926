import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { storable } from '../src/domain/storable-text';
import type { Deps } from '../src/deps';
import { documentAsText, findModel, type ProviderRegistry } from '../src/providers';
import { pricedUsage } from './priced-usage';
import { ContextWindowExceededError } from '../src/providers/errors';
import { estimateRequestTokens, estimateTextTokens } from '../src/providers/tokens';
import type { ModelRecord } from '../src/providers/catalog';
import { addUsage, creditsExhaustedForRun, zeroUsage, type RunUsage } from '../src/domain/run';
import { withTransaction } from '../src/store/db';
import { appendEvents, lockSession, type EventRow } from '../src/store/events';
import { assertRunHoldsSession, assertRunMayStep, buildConversation, creditsAvailableNano, inConversationOrder, loadRunContext } from './run-context';
import { recordBrokenAttempt } from '../src/store/attempt-usage';
import { outputReserve, runRequest, toRunFailure } from './call-model';
import { heartbeating } from './heartbeat';

const SUMMARY_PROMPT =
  'Summarize the conversation below for your own future reference: keep every fact, decision, open question and tool result that later turns may need. Answer with the summary only.';

/**
 * Compaction: the oldest events are summarized by the model into a `session.compaction`
 * event (originals stay in the log). The newest user message and everything after it
 * are kept verbatim. Returns whether the compacted context now fits.
 */
export function createCompactActivities(deps: Deps, providers: ProviderRegistry) {
  return {
    async compactContext(input: { sessionId: string; runId: string; turn: number }): Promise<{ fits: boolean; contextTokens: number; usage: RunUsage }> {
      const context = await loadRunContext(deps.db, input.sessionId);
      const model = findModel(context.agent.model)!;
      assertRunMayStep(context.session, input.runId);
      const keyPrefix = `${input.runId}:compaction:${input.turn}:`;
      const cut = compactionCut(context.events);
      if (!cut) {
        // A retry of an attempt whose summary was already appended: report that compaction.
        const done = await recordedCompaction(deps, input.sessionId, keyPrefix);
        return done ? fitsNow(deps, input.sessionId, done.usage) : { fits: false, contextTokens: 0, usage: zeroUsage() };
      }
      // What compaction keeps verbatim must fit with the smallest summary: when it cannot, no
      // summary would help, and none is requested (or billed).
      const { older, kept, throughSeq, keptBelow } = cut;
      const keptAlone = estimateRequestTokens(runRequest({ ...context, summary: '', events: kept }, model));
      if (keptAlone + outputReserve(model, context.agent.max_tokens) > model.context_window) return { fits: false, contextTokens: keptAlone, usage: zeroUsage() };
      const transcript = runRequest({ ...context, events: older }, model)
        .messages.map((m) => `${m.role}: ${m.content.map((p) => (p.type === 'text' ? p.text : p.type === 'tool-call' ? `[tool ${p.name} ${JSON.stringify(p.input)}]` : p.type === 'tool-result' ? `[result ${String(p.content).slice(0, 2000)}]` : p.type === 'document' ? documentAsText(p) : '')).join(' ')}`)
        .join('\n');
      let summary = context.summary ?? '';
      let usage = zeroUsage();
      try {
        // The transcript may itself be larger than the model's window (a long session since the
        // last compaction): it is summarized in pieces that fit, each folded into the summary so far.
        // Every piece after the first also carries the summary so far (up to summaryMaxTokens).
        for (const piece of transcriptPieces(transcript, pieceChars(model, Math.max(summary.length, summaryMaxTokens(model) * 4)))) {
          // Summaries are model calls too: none on an exhausted balance (what the project's runs,
          // this one included, have used and not been billed for counts against it, and so do the
          // pieces summarized so far, recorded for the run's close to bill).
          if (creditsExhaustedForRun(await creditsAvailableNano(deps.db, context.session.project_id), usage.credits_nano)) {
            throw ApplicationFailure.create({ type: 'rate_limit_error', message: 'the project credit balance is exhausted', nonRetryable: true });
          }
          const result = await heartbeating((signal) =>
            providers.generate(
              {
                model,
                system: [{ type: 'text', text: SUMMARY_PROMPT }],
                messages: [{ role: 'user', content: [{ type: 'text', text: `${summary ? `Earlier summary:\n${summary}\n\n` : ''}${piece}` }] }],
                max_tokens: summaryMaxTokens(model),
              },
              { signal },
            ),
          );
          summary = result.content.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('');
          usage = addUsage(usage, pricedUsage(model, result.usage));
        }
      } catch (error) {
        // Pieces summarized before the failure were made (and billed by the provider): the run's
        // close bills them, whatever happens next. Keyed by this attempt, as a turn's broken call is.
        if (usage.credits_nano > 0) {
          const { activityId, attempt, workflowExecution } = Context.current().info;
          await recordBrokenAttempt(deps.db, input.sessionId, input.runId, `${keyPrefix}summaries:${workflowExecution?.runId ?? '-'}:${activityId}:attempt:${attempt}`, usage).catch(() => undefined);
        }
        if (error instanceof ApplicationFailure) throw error; // (the credit check's)
        if (Context.current().cancellationSignal.aborted) throw new CancelledFailure('interrupted');
        // The provider counts tokens its own way: a piece it still finds too long ends the run
        // as the spec says an overflow that compaction cannot resolve does.
        if (error instanceof ContextWindowExceededError) {
          throw ApplicationFailure.create({ type: 'context_exceeded', message: 'the summary request exceeded the context window', nonRetryable: true });
        }
        throw toRunFailure(error);
      }
      if (!summary) throw ApplicationFailure.create({ type: 'internal_error', message: 'empty summary', nonRetryable: true });

      await withTransaction(deps.db, async (client) => {
        // Checked again under the lock: the run may have been closed while the summaries ran.
        assertRunHoldsSession(await lockSession(client, input.sessionId), input.runId);
        await appendEvents(client, input.sessionId, storable([
          {
            type: 'session.compaction',
            content: [{ type: 'text', text: summary }],
            // The summary's usage is kept with it, so a retried attempt still bills it. The deferred
            // tools loaded so far stay loaded: their tool_loaded results are now only summarized.
            attributes: {
              compacted_through_seq: throughSeq,
              ...(keptBelow.length > 0 ? { _kept_seqs: keptBelow } : {}),
              _usage: usage,
              _loaded_tools: [...buildConversation({ ...context, events: older }).loadedTools],
            },
            run_id: input.runId,
            idempotency_key: `${keyPrefix}${throughSeq}`,
            processed: true,
          },
        ]));
      });
      return fitsNow(deps, input.sessionId, usage);
    },
  };
}

/**
 * Where compaction cuts the log: the newest message a run has claimed and everything after it
 * are kept, and so are the `system.message` instructions before it; everything else before it
 * is summarized. The cut is made in conversation order, not log
 * order: a message sent while an earlier run was in its tool loop sits in the log between that
 * run's calls and their results, and a cut there would keep results whose calls were summarized
 * (every provider refuses such a history). Everything summarized is at or below `throughSeq`;
 * the other events that sit below it in the log (kept messages, and queued ones no run has
 * claimed yet) are named in `keptBelow`, so later reads keep them.
 * Null when there is nothing before the newest message to summarize.
 */
export function compactionCut(events: EventRow[]): { older: EventRow[]; kept: EventRow[]; throughSeq: number; keptBelow: number[] } | null {
  // Queued messages (no run has claimed them yet) are not in the conversation at all.
  const ordered = inConversationOrder(events);
  const lastUser = ordered.map((e) => e.type === 'user.message').lastIndexOf(true);
  // System messages are instructions, not turns: they are never summarized away.
  const before = ordered.slice(0, Math.max(0, lastUser));
  const older = before.filter((e) => e.type !== 'system.message');
  if (lastUser <= 0 || older.length === 0) return null;
  const kept = [...before.filter((e) => e.type === 'system.message'), ...ordered.slice(lastUser)];
  const throughSeq = older.reduce((max, e) => Math.max(max, Number(e.seq)), 0);
  // Everything at or below the cut that is not summarized stays: the kept messages, and messages
  // still queued (no run has claimed them yet: a later run will).
  const summarized = new Set(older);
  const keptBelow = events.filter((e) => !summarized.has(e) && Number(e.seq) <= throughSeq).map((e) => Number(e.seq));
  return { older, kept, throughSeq, keptBelow };
}

const summaryMaxTokens = (model: ModelRecord) => Math.min(1024, model.max_output_tokens);

/**
 * Characters of transcript one summary request may carry: the window less the answer, the
 * prompt and the summary so far, at three quarters of the estimate (token counts of real
 * tokenizers differ from the four-characters rule).
 */
function pieceChars(model: ModelRecord, summaryChars: number): number {
  const tokens = model.context_window - summaryMaxTokens(model) - estimateTextTokens(SUMMARY_PROMPT) - estimateTextTokens(' '.repeat(summaryChars)) - 64;
  return Math.max(1000, Math.floor(tokens * 4 * 0.75));
}

/**
 * The transcript cut at line ends into pieces of at most `maxChars` (room for the summary
 * carried between pieces is left by the caller). A single line
 * longer than a piece is cut short: a summary cannot keep all of it anyway.
 */
function transcriptPieces(transcript: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const raw of transcript.split('\n')) {
    const line = raw.length > maxChars ? `${raw.slice(0, maxChars - 20)} …[cut short]` : raw;
    if (current && current.length + 1 + line.length > maxChars) {
      pieces.push(current);
      current = '';
    }
    current = current ? `${current}\n${line}` : line;
  }
  if (current) pieces.push(current);
  return pieces;
}

/** Whether the context as it now stands (after the latest compaction) fits the model's window. */
async function fitsNow(deps: Deps, sessionId: string, usage: RunUsage): Promise<{ fits: boolean; contextTokens: number; usage: RunUsage }> {
  const after = await loadRunContext(deps.db, sessionId);
  const model = findModel(after.agent.model)!;
  const estimate = estimateRequestTokens(runRequest(after, model));
  return { fits: estimate + outputReserve(model, after.agent.max_tokens) <= model.context_window, contextTokens: estimate, usage };
}

/** The compaction an earlier attempt of this activity appended, if any. */
async function recordedCompaction(deps: Deps, sessionId: string, keyPrefix: string): Promise<{ usage: RunUsage } | null> {
  const { rows } = await deps.db.query<{ usage: RunUsage | null }>(
    `SELECT attributes->'_usage' AS usage FROM session_events
      WHERE session_id = $1 AND type = 'session.compaction' AND starts_with(idempotency_key, $2)
      ORDER BY seq DESC LIMIT 1`,
    [sessionId, keyPrefix],
  );
  return rows[0] ? { usage: rows[0].usage ?? zeroUsage() } : null;
}
