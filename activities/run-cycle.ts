import type { PoolClient } from 'pg';
import { isDevelopment } from '../src/config';
import type { Deps } from '../src/deps';
import { unservedTools, type ToolEntry } from '../src/domain/agent-tools';
import { jsonSchemaError } from '../src/domain/json-schema';
import { toolInputValidator } from '../src/domain/run-tools';
import { addUsage, CLIENT_SAFE_MESSAGES, CREDITS_EXHAUSTED_MESSAGE, creditsExhaustedForRun, traceparentFor, usageByModel, zeroUsage, type RunErrorCode, type RunUsage, type StopReason } from '../src/domain/run';
import { withTransaction } from '../src/store/db';
import { appendEvent, appendEvents, lockSessionWithAgent, LOCKED_SESSION_RETURNING, type LockedSession, type NewEvent, type SessionAgent } from '../src/store/events';
import { newId } from '../src/store/ids';
import { markWorkflowEnded } from '../src/store/sessions';
import { turnUsageOf } from './priced-usage';
import { clearBrokenAttempts } from '../src/store/attempt-usage';
import { CANCELLED_BECAUSE, cancelledResults, union } from '../src/domain/events';
import { isAsyncExecutionEnabled } from '../src/store/sessions';
import { insertUsage } from '../src/billing/usage';
import { debitCredits } from '../src/billing/credits';
import { creditsAvailableNano } from './run-context';
import { createHash } from 'node:crypto';

/**
 * Opening and closing run cycles. A cycle runs from `session.status_running` to the
 * `session.status_idle` or `session.error` that closes it (a client-tool pause closes a
 * cycle; the results open the next). Both activities hold the session row lock and are
 * idempotent by their cycle key, so a retried activity changes nothing twice.
 */
export interface RunLimits {
  maxIterations: number;
  runTimeoutMs: number;
  abandonAfterMs: number;
}

export type RunCycle =
  | {
      kind: 'none';
      /** The session is deleted: its workflow has nothing more to do and ends. */
      sessionDeleted?: true;
    }
  | {
      kind: 'start' | 'resume';
      runId: string;
      cycleKey: string;
      model: string;
      limits: RunLimits;
      toolsetError?: RunErrorCode;
      /** The log already holds an interrupt of this run (its signal may come later, or never): cancel it before any model call. */
      interrupted?: boolean;
    };

/** Why an agent's tools cannot run here, checked when a run starts (agents stored before validation included). */
function toolsetProblem(tools: ToolEntry[], development: boolean): RunErrorCode | undefined {
  if (tools.some((tool) => (tool.type ?? 'custom') === 'custom' && 'input_schema' in tool && tool.input_schema !== undefined && unusableSchema(tool))) {
    return 'invalid_tool_schema';
  }
  return unservedTools(tools, development).length > 0 ? 'toolset_incomplete' : undefined;
}

/**
 * A deferred tool's inputs are validated by the gateway, so its schema must compile whatever
 * its size (cached per worker); a client-executed tool's schema only has to be valid.
 */
function unusableSchema(tool: ToolEntry & { input_schema?: unknown; defer_loading?: boolean }): boolean {
  if (!tool.defer_loading) return jsonSchemaError(tool.input_schema, { compile: true }) !== undefined;
  if (jsonSchemaError(tool.input_schema, { compile: false })) return true;
  // Compiled once per worker (cached for the run's calls), whatever its size.
  try {
    toolInputValidator(tool.input_schema as Record<string, unknown>);
    return false;
  } catch {
    return true;
  }
}

interface CloseInput {
  sessionId: string;
  runId: string;
  cycleKey: string;
  contextTokens: number;
  stopReason?: StopReason;
  errorCode?: RunErrorCode;
  toolCalls?: Array<{ id: string; name: string }>;
  endRun: boolean;
  /**
   * A pause whose run has an interrupt waiting (the api accepted it while the turn's last calls
   * ran) ends the run instead, as user_cancelled. Only for callers that then take the next run
   * this close claims (workflow code older than this does not).
   */
  endIfInterrupted?: boolean;
  /** The close of a run no execution holds any more (an operator ended it): its end says so whatever came after. */
  orphan?: true;
}

/**
 * A started run (`owner`: the execution its session.status_running names) that another
 * execution claimed and the claiming one does not hold: an operator's reset ended that
 * execution. (A run claimed by this execution, e.g. by a claim attempt that ran late, is never
 * taken for an orphan.)
 */
function heldByEndedExecution(input: ClaimInput, runId: string, owner: string | null): boolean {
  return input.holding !== undefined && input.holding !== runId && owner !== null && owner !== input.execution;
}

const RUN_STARTING_TYPES = ['user.message', 'system.message', 'user.tool_result', 'user.interrupt'];

interface ClaimInput {
  sessionId: string;
  cycleKey: string;
  /** The first claim of an execution that did not continue from another. */
  freshExecution?: boolean;
  /**
   * The run the claiming execution is in (a pause waiting for its results), or null when it
   * is in none. Omitted by workflow code older than this field.
   */
  holding?: string | null;
  /**
   * The claiming workflow execution (its Temporal run id), recorded on the cycle's
   * session.status_running. A started run that another execution claimed, and that this
   * one does not hold, was left by an execution an operator's reset ended.
   */
  execution?: string;
}

export function createRunCycleActivities(deps: Deps) {
  const limits: RunLimits = {
    maxIterations: deps.config.RUN_MAX_ITERATIONS,
    runTimeoutMs: deps.config.RUN_TIMEOUT_MS,
    abandonAfterMs: deps.config.RUN_ABANDON_AFTER_MS,
  };

  /**
   * Claims the work the log holds (a new run, the resumption of a paused one, or nothing),
   * inside the caller's transaction. Idempotent by the cycle key. `locked` is the session
   * row the caller already locked and holds as it now stands (with its agent), if any.
   */
  async function claimCycle(
    client: PoolClient,
    input: ClaimInput,
    locked?: LockedSession & { agent: SessionAgent | null },
  ): Promise<RunCycle> {
    const session = locked ?? (await lockSessionWithAgent(client, input.sessionId));
    if (!session || session.deleted_at) {
      // A run the deleted session's log still holds: one that never started (the delete came
      // before its claim) was cancelled by the delete, and ends user_cancelled; one that started,
      // found by a fresh execution (the one that ran it is gone), ends now billed for what it
      // used, as any orphaned run does.
      if (session?.active_run_id) {
        const runId = session.active_run_id;
        const { rows: running } = await client.query<{ owner: string | null }>(
          `SELECT attributes->>'execution' AS owner FROM session_events WHERE session_id = $1 AND run_id = $2 AND type = 'session.status_running' ORDER BY seq DESC LIMIT 1`,
          [session.id, runId],
        );
        const started = running.length > 0;
        if (!started || input.freshExecution || heldByEndedExecution(input, runId, running[0]!.owner)) {
          await closeCycle(client, {
            sessionId: session.id,
            runId,
            cycleKey: `${input.cycleKey}:orphan`,
            ...(started ? { orphan: true as const, errorCode: 'run_interrupted' as const } : {}),
            contextTokens: await latestTurnTokens(client, session.id, runId),
            endRun: true,
          });
        }
      }
      // Between runs the workflow ends on this answer: the reconciler need not wake it again.
      // (A paused run's claim does not end it: its run must end first, which the interrupt does.)
      if (session && input.holding === null) await markWorkflowEnded(client, session.id);
      return { kind: 'none', sessionDeleted: true };
    }
    const agent = session.agent;
    if (!agent) return { kind: 'none' };

    // One read for every question the claim asks: did an earlier attempt already claim this
    // cycle, which run-starting events wait unprocessed, and has the active run started.
    const { rows: [read] } = await client.query<{
      claimed: { run_id: string; cycle_kind?: 'start' | 'resume' } | null;
      waiting: string[];
      next_run_id: string | null;
      started: boolean;
      interrupted: boolean;
      owner: string | null;
    }>({
      name: 'claim_read_v3',
      text: `SELECT (SELECT json_build_object('run_id', run_id, 'cycle_kind', attributes->'cycle_kind') FROM session_events
                WHERE session_id = $1 AND idempotency_key = $2) AS claimed,
              ARRAY(SELECT type FROM session_events WHERE session_id = $1 AND processed_at IS NULL AND type = ANY($3)) AS waiting,
              (SELECT run_id FROM session_events WHERE session_id = $1 AND processed_at IS NULL AND type = 'user.message' ORDER BY seq LIMIT 1) AS next_run_id,
              EXISTS (SELECT 1 FROM session_events WHERE session_id = $1 AND run_id = $4 AND type = 'session.status_running') AS started,
              EXISTS (SELECT 1 FROM session_events WHERE session_id = $1 AND run_id = $4 AND type = 'user.interrupt' AND processed_at IS NULL) AS interrupted,
              (SELECT attributes->>'execution' FROM session_events WHERE session_id = $1 AND run_id = $4 AND type = 'session.status_running'
                ORDER BY seq DESC LIMIT 1) AS owner`,
      values: [session.id, `${input.cycleKey}:running`, RUN_STARTING_TYPES, session.active_run_id],
    });
    const { claimed, waiting, started } = read!;
    const claim = (kind: 'start' | 'resume', runId: string): RunCycle => {
      const toolsetError = kind === 'start' ? toolsetProblem(agent.tools ?? [], isDevelopment(deps.config)) : undefined;
      const interrupted = read!.interrupted && runId === session.active_run_id;
      return { kind, runId, cycleKey: input.cycleKey, model: agent.model, limits, ...(toolsetError ? { toolsetError } : {}), ...(interrupted ? { interrupted } : {}) };
    };
    // A retry answers as the first attempt did, the toolset check included.
    if (claimed) return claim(claimed.cycle_kind ?? 'start', claimed.run_id);

    const types = new Set(waiting);
    let runId = session.active_run_id;
    let kind: 'start' | 'resume';
    if (!runId) {
      // No run holds the session: a waiting user.message starts one, unless the
      // session's site has asynchronous execution switched off.
      if (!types.has('user.message')) return { kind: 'none' };
      if (!(await isAsyncExecutionEnabled(client, session))) return { kind: 'none' };
      // The api named the run of a message queued behind another run when it accepted it.
      runId = read!.next_run_id ?? newId('run');
      kind = 'start';
    } else {
      if (started && (input.freshExecution || heldByEndedExecution(input, runId, read!.owner))) {
        // A run the log shows started (in flight, paused, or with results to resume it) that no
        // execution holds: it ends now, billed for the turns it completed, and an interrupt
        // sent for it makes that end user_cancelled. Then the log's waiting work is claimed.
        const closed = await closeCycle(client, {
          sessionId: session.id,
          runId,
          cycleKey: `${input.cycleKey}:orphan`,
          orphan: true,
          contextTokens: await latestTurnTokens(client, session.id, runId),
          ...(read!.interrupted ? { stopReason: 'user_cancelled' as const } : { errorCode: 'run_interrupted' as const }),
          endRun: true,
        });
        return claimCycle(client, { sessionId: session.id, cycleKey: input.cycleKey, execution: input.execution }, closed);
      }
      if (session.pending_tool_use_ids.length > 0) return { kind: 'none' }; // still waiting for results
      // Runs start in the order their requests were accepted: one the api started while an
      // older request still waited (no run held the session then: a close that claimed
      // nothing, asynchronous execution switched back on) goes after that older one.
      if (!started && read!.next_run_id && read!.next_run_id !== runId) runId = read!.next_run_id;
      if (!started) kind = 'start';
      else if (types.has('user.tool_result')) kind = 'resume';
      else return { kind: 'none' };
    }

    // What a run takes: the messages of the request that named it (the api stamps them with
    // this run id), with the system messages and late tool results waiting before them, never a
    // message a later request sent (stamped with its own run, or, for system messages, after
    // this run's last message). So a message sent after an interrupt, or while the workflow had
    // not started the run the api claimed, waits for its own run. No interrupt is consumed here:
    // one of the run being claimed is consumed by that run's close (so one whose signal was lost
    // stays visible to the reconciler until the run ends), and one sent while no run was in
    // flight is acted on by no run, so it stays unprocessed (the spec: no other effect). A resumption takes the tool
    // results only: a user.message starts its own run once this one ends, and a system.message sent while the run was
    // in flight waits for that next run (the run in flight does not see it).
    await client.query({
      name: 'claim_write_v5',
      text: `WITH consumed AS (
         UPDATE session_events SET processed_at = clock_timestamp(), run_id = COALESCE(run_id, $2)
          WHERE session_id = $1 AND processed_at IS NULL AND type = ANY($3)
            AND type <> 'user.interrupt'
            AND NOT (type IN ('user.message', 'system.message') AND $4::boolean)
            AND NOT (type IN ('user.message', 'system.message') AND run_id IS NOT NULL AND run_id <> $2)
            AND NOT (type = 'system.message' AND run_id IS NULL AND seq > COALESCE(
                  (SELECT max(seq) FROM session_events
                    WHERE session_id = $1 AND processed_at IS NULL AND run_id = $2 AND type = 'user.message'), 9223372036854775807)))
       UPDATE sessions SET active_run_id = $2, status = 'running', updated_at = now() WHERE id = $1`,
      values: [session.id, runId, RUN_STARTING_TYPES, kind === 'resume'],
    });
    await appendEvents(client, session.id, [
      { type: 'session.status_running', attributes: { cycle_kind: kind, ...(input.execution ? { execution: input.execution } : {}) }, run_id: runId, idempotency_key: `${input.cycleKey}:running`, processed: true },
    ]);
    return claim(kind, runId);
  }

  /**
   * What a run's current cycle has used and nobody has billed yet: its turns and compactions
   * since the run's latest closing event (a pause bills its cycle when it closes), and the
   * run's broken model calls (store/attempt-usage.ts; recorded under the session lock the
   * caller holds, so none can be added meanwhile). `brokenCalls`: whether there were any.
   */
  async function unbilledUsage(client: PoolClient, sessionId: string, runId: string): Promise<{ usage: RunUsage; brokenCalls: boolean; calledTools: boolean }> {
    const { rows } = await client.query<{ type: string; usage: (RunUsage & Record<string, unknown>) | null; stop: string | null }>({
      name: 'unbilled_usage_v3',
      text: `SELECT type, CASE WHEN type = 'session.compaction' THEN attributes->'_usage' ELSE content->0 END AS usage, attributes->>'stop' AS stop
               FROM session_events
              WHERE session_id = $1 AND run_id = $2 AND type IN ('session.turn_usage', 'session.compaction')
                AND seq > COALESCE((SELECT max(seq) FROM session_events
                                     WHERE session_id = $1 AND run_id = $2 AND type IN ('session.status_idle', 'session.error')), 0)
             UNION ALL
             SELECT 'broken_call', usage, NULL FROM run_attempt_usage WHERE run_id = $2`,
      values: [sessionId, runId],
    });
    // A compaction's `_usage` and a broken call's usage are run usages already; a turn's block is read like a retried turn's.
    const usage = rows.reduce((sum, row) => addUsage(sum, row.type === 'session.turn_usage' ? turnUsageOf(row.usage ?? {}) : (row.usage ?? {})), zeroUsage());
    return { usage, brokenCalls: rows.some((row) => row.type === 'broken_call'), calledTools: rows.some((row) => row.type === 'session.turn_usage' && row.stop === 'tool_use') };
  }

  /**
   * The run's tool calls the log holds no result for, oldest first: a run that ends with some
   * (an interrupt that came while the turn asking for them was in flight: neither its server
   * tools ran nor did it pause for its client tools) must answer them as cancelled.
   */
  async function unansweredCalls(client: PoolClient, sessionId: string, runId: string): Promise<string[]> {
    // Results are read only from the run's first call on, not the whole session's history
    // (this runs under the session's row lock).
    const { rows } = await client.query<{ id: string }>({
      name: 'unanswered_calls_v2',
      text: `WITH calls AS (
               SELECT e.seq, call->>'id' AS id
                 FROM session_events e CROSS JOIN LATERAL jsonb_array_elements(e.content) AS call
                WHERE e.session_id = $1 AND e.run_id = $2 AND e.type = 'agent.tool_use'),
             answered AS (
               SELECT result->>'tool_use_id' AS id
                 FROM session_events r CROSS JOIN LATERAL jsonb_array_elements(r.content) AS result
                WHERE r.session_id = $1 AND r.type = 'user.tool_result' AND r.seq > (SELECT min(seq) FROM calls))
             SELECT id FROM calls WHERE NOT EXISTS (SELECT 1 FROM answered WHERE answered.id = calls.id) ORDER BY seq`,
      values: [sessionId, runId],
    });
    return rows.map((row) => row.id);
  }

  /** The run's latest turn's total tokens (its `context_tokens`), 0 when it made no model request. */
  async function latestTurnTokens(client: PoolClient, sessionId: string, runId: string): Promise<number> {
    const { rows } = await client.query<{ tokens: string | null }>(
      `SELECT content->0->>'total_tokens' AS tokens FROM session_events
        WHERE session_id = $1 AND run_id = $2 AND type = 'session.turn_usage' ORDER BY seq DESC LIMIT 1`,
      [sessionId, runId],
    );
    return Number(rows[0]?.tokens ?? 0);
  }

  /**
   * Closes a cycle: appends `session.status_idle` (with stop_reason, context_tokens and, for
   * a pause, tool_use_ids and tool_traceparents) or `session.error`, with the cycle's usage;
   * debits the credits, adds to the session's cumulative usage and writes the usage row.
   * Returns the session row as the close left it (still locked), or nothing if there was nothing to close.
   */
  async function closeCycle(client: PoolClient, input: CloseInput): Promise<(LockedSession & { agent: SessionAgent | null }) | undefined> {
    const session = await lockSessionWithAgent(client, input.sessionId);
    // Nothing to close when the run no longer holds the session: a retry after this close
    // committed, or a workflow an operator reset to before the run's end (the log keeps
    // the end it already has).
    if (!session || session.active_run_id !== input.runId) return undefined;
    const key = `${input.cycleKey}:end`;
    // A run's end consumes its interrupts. One the api accepted while this run held the
    // session (under the same row lock) was meant for this run, even if the workflow has not
    // seen its signal yet or the model answered before the cancellation reached the call:
    // the run ends user_cancelled, as the caller was told it would.
    // The same holds for a pause: an interrupt that came while the turn's last calls ran (a
    // server tool finishes despite a cancellation) ends the run instead of pausing it, and the
    // calls it would have waited for are cancelled.
    let stopReason = input.stopReason;
    let { endRun, toolCalls } = input;
    // A pause keeps the run holding the session, so a retried pause close is not caught above:
    // it must find its closing event before acting on an interrupt that came after it committed.
    if (!endRun && toolCalls && (await closingEventExists(client, session.id, key))) return undefined;
    // The cycle is billed for what the log holds: its turns and compactions (a turn an activity
    // recorded after its result stopped mattering to the workflow included), and the model calls
    // of this run whose stream broke after producing output (cleared below once billed).
    const { usage: runUsage, brokenCalls, calledTools } = await unbilledUsage(client, session.id, input.runId);
    // Event usage carries the spec's fields only; the rest is for the usage rows.
    const { reasoning_tokens: _reasoning, by_model: _byModel, ...usage } = runUsage;
    if (endRun || (toolCalls && input.endIfInterrupted)) {
      const { rowCount } = await client.query(
        `UPDATE session_events SET processed_at = clock_timestamp()
          WHERE session_id = $1 AND processed_at IS NULL AND type = 'user.interrupt' AND run_id = $2`,
        [session.id, input.runId],
      );
      if (rowCount && !input.errorCode) stopReason = 'user_cancelled';
      if (rowCount && toolCalls) endRun = true;
    }
    // A delete interrupts the run in flight (docs): one that ends after the delete committed ends
    // user_cancelled, as an interrupt's run does: whether its model answered before the
    // cancellation reached the call (what it produced stays in the log and is billed), or its
    // next step found the session deleted (run_interrupted), or it never started. A run that
    // failed on its own (an upstream error), or that an operator's termination had already
    // orphaned, keeps its error.
    let errorCode = input.errorCode;
    if (session.deleted_at && endRun && !input.orphan && (errorCode === undefined || errorCode === 'run_interrupted')) {
      errorCode = undefined;
      stopReason = 'user_cancelled';
    }
    // A run that ends while paused (an interrupt, abandonment, an operator's cancel, an orphaned
    // run's close) answers its outstanding client calls as cancelled, just before its closing event: the next run's
    // conversation must hold a result for every tool call before the messages that follow, and
    // a result sent later is refused (409) as for any cancelled call.
    // Also any call of the cycle's turns left without a result (the log says which: only read when a turn asked for tools).
    const outstanding = endRun
      ? [...new Set([...(toolCalls && !input.endRun ? toolCalls.map((call) => call.id) : session.pending_tool_use_ids), ...(calledTools ? await unansweredCalls(client, session.id, input.runId) : [])])]
      : [];
    if (endRun) toolCalls = undefined;
    if (outstanding.length > 0) {
      await appendEvents(client, session.id, cancelledResults(outstanding, CANCELLED_BECAUSE.runEnded).map((event, i) => ({ ...event, run_id: input.runId, idempotency_key: `${key}:cancelled:${i}` })));
    }
    // The closing event decides: if an earlier attempt already appended it, that attempt also
    // did everything below in the same transaction, so there is nothing left to do.
    let closing: NewEvent;
    if (errorCode) {
      closing = {
        type: 'session.error',
        content: [{ type: 'error', message: await errorMessage(client, session, errorCode, usage), code: errorCode }],
        usage,
        error_code: errorCode,
        run_id: input.runId,
        idempotency_key: key,
        processed: true,
      };
    } else {
      const toolUseIds = toolCalls?.map((call) => call.id);
      const traceId = createHash('sha256').update(input.runId).digest('hex').slice(0, 32);
      closing = {
        type: 'session.status_idle',
        attributes: {
          stop_reason: stopReason ?? 'end_turn',
          context_tokens: input.contextTokens,
          ...(toolUseIds
            ? {
                tool_use_ids: toolUseIds,
                tool_traceparents: Object.fromEntries(
                  toolUseIds.map((id) => [id, traceparentFor(traceId, createHash('sha256').update(id).digest('hex').slice(0, 16))]),
                ),
              }
            : {}),
        },
        usage,
        run_id: input.runId,
        idempotency_key: key,
        processed: true,
      };
    }
    if (!(await appendEvent(client, session.id, closing)).inserted) return undefined;
    if (brokenCalls) await clearBrokenAttempts(client, input.runId);

    const { rows: updated } = await client.query<LockedSession>(
      `UPDATE sessions SET
         input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
         cache_read_input_tokens = cache_read_input_tokens + $4, cache_creation_input_tokens = cache_creation_input_tokens + $5,
         credits_nano = credits_nano + $6,
         pending_tool_use_ids = COALESCE($7::jsonb, pending_tool_use_ids),
         cancelled_tool_use_ids = COALESCE($10::jsonb, cancelled_tool_use_ids),
         active_run_id = CASE WHEN $8 THEN NULL ELSE active_run_id END,
         status = CASE WHEN deleted_at IS NOT NULL THEN 'terminated' ELSE $9 END, updated_at = now()
       WHERE id = $1
       RETURNING ${LOCKED_SESSION_RETURNING}`,
      [
        session.id,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
        usage.credits_nano,
        // A pause records the calls it waits for; a run that ends while paused cancelled them above.
        toolCalls ? JSON.stringify(toolCalls.map((call) => call.id)) : outstanding.length > 0 ? '[]' : null,
        endRun,
        errorCode ? 'error' : 'idle',
        outstanding.length > 0 ? JSON.stringify(union(session.cancelled_tool_use_ids, outstanding)) : null,
      ],
    );
    if (usage.credits_nano > 0 || usage.input_tokens + usage.output_tokens > 0) {
      // One row per model the cycle used (the agent's model may have changed between turns).
      for (const row of usageByModel(runUsage, session.agent?.model ?? 'unknown')) {
        await insertUsage(client, {
          projectId: session.project_id,
          model: row.model,
          operation: 'agent_run',
          clientId: session.client_id,
          authMethod: 'internal_service',
          actorType: 'service',
          application: 'svc-agents',
          input_tokens: row.usage.input_tokens,
          output_tokens: row.usage.output_tokens,
          cache_read_input_tokens: row.usage.cache_read_input_tokens,
          cache_creation_input_tokens: row.usage.cache_creation_input_tokens,
          reasoning_tokens: row.usage.reasoning_tokens ?? 0,
          credits_nano: row.usage.credits_nano,
          requestId: input.runId,
        });
      }
      await debitCredits(client, session.project_id, BigInt(usage.credits_nano), input.runId);
    }
    return { ...updated[0]!, agent: session.agent };
  }

  async function closingEventExists(client: PoolClient, sessionId: string, key: string): Promise<boolean> {
    const { rowCount } = await client.query({
      name: 'closing_event_exists',
      text: 'SELECT 1 FROM session_events WHERE session_id = $1 AND idempotency_key = $2',
      values: [sessionId, key],
    });
    return rowCount === 1;
  }

  /**
   * The closing message: a run the credit check stopped says so, not that the provider limited
   * it (the check's own reckoning: the balance less the project's other runs' unbilled usage).
   */
  async function errorMessage(client: PoolClient, session: { id: string; project_id: string }, code: RunErrorCode, usage: RunUsage): Promise<string> {
    if (code !== 'rate_limit_error') return CLIENT_SAFE_MESSAGES[code];
    return creditsExhaustedForRun(await creditsAvailableNano(client, session.project_id, session.id), usage.credits_nano) ? CREDITS_EXHAUSTED_MESSAGE : CLIENT_SAFE_MESSAGES[code];
  }

  return {
    /**
     * Claims the work the log holds: a new run, the resumption of a paused one, or nothing.
     * `freshExecution`: the first claim of a workflow execution that did not continue from
     * another (the previous one was terminated, or has failed): a run the log shows in flight
     * is held by no execution any more, so it is closed as run_interrupted first.
     */
    async startRunCycle(input: ClaimInput): Promise<RunCycle> {
      return withTransaction(deps.db, (client) => claimCycle(client, input));
    },

    /**
     * Closes a cycle (closeCycle), all in one transaction. With `claimCycleKey` the same
     * transaction then claims the next cycle (as startRunCycle would); a retry finds both done
     * and returns the same claim.
     */
    async finishRunCycle(input: CloseInput & {
      /**
       * Given when a run ends: also claim what the log holds next (saves the workflow a step).
       * Given with a pause: the pause ends the run if an interrupt is waiting, then claims the
       * same way; a pause that holds answers undefined.
       */
      claimCycleKey?: string;
      execution?: string;
    }): Promise<RunCycle | undefined> {
      return withTransaction(deps.db, async (client) => {
        const pause = input.toolCalls !== undefined && !input.endRun;
        const closed = await closeCycle(client, { ...input, endIfInterrupted: pause && input.claimCycleKey !== undefined });
        if (!input.claimCycleKey) return undefined;
        const session = closed ?? (pause ? await lockSessionWithAgent(client, input.sessionId) : undefined);
        // A pause that holds (or the retry of one): nothing ended, nothing to claim.
        if (pause && session && session.active_run_id === input.runId) return undefined;
        // The run just closed: the execution holds none while it claims the next.
        return claimCycle(client, { sessionId: input.sessionId, cycleKey: input.claimCycleKey, holding: null, execution: input.execution }, session);
      });
    },
  };
}
