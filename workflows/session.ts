import {
  CancellationScope,
  CancelledFailure,
  ActivityCancellationType,
  ApplicationFailure,
  type RetryPolicy,
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  defineSignal,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { SIGNAL_EVENTS_APPENDED, SIGNAL_INTERRUPT, SIGNAL_TITLE_CHANGED } from '../src/temporal/names';
import type { SessionWorkflowInput } from '../src/temporal/session-signals';
import { addUsage, isRunErrorCode, zeroUsage, type RunErrorCode, type RunUsage, type StopReason } from '../src/domain/run';
import type { RunCycle } from '../activities/run-cycle';

type ActiveCycle = Extract<RunCycle, { runId: string }>;

/**
 * One long-lived workflow per session (id `session/<session_id>`). It sleeps until the
 * events API signals, then claims the work the event log holds and runs it: a run is a
 * loop of model turns (activities); server-side tools run as activities; client tools
 * pause the run until their results arrive. All I/O happens in activities; this code
 * only decides what happens next, so replaying its history always takes the same path.
 */
export const eventsAppendedSignal = defineSignal<[string | null]>(SIGNAL_EVENTS_APPENDED);
export const interruptSignal = defineSignal<[string | null]>(SIGNAL_INTERRUPT);
// A renamed session: the memo follows, so the Temporal UI shows the current title. (The static
// summary is fixed when the workflow starts.)
export const titleChangedSignal = defineSignal<[string]>(SIGNAL_TITLE_CHANGED);

// Retries have one owner: this policy. Client errors are non-retryable ApplicationFailures.
const retry: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '20 seconds',
  maximumAttempts: 4,
  nonRetryableErrorTypes: ['invalid_tool_schema', 'toolset_incomplete', 'context_exceeded', 'internal_error'],
};

// Claiming and closing cycles are short Postgres transactions: local activities run them
// inside the workflow task, without a round trip through the Temporal server each.
const bookkeepingOptions = { startToCloseTimeout: '30 seconds', retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds' } } as const;
const localBookkeeping = proxyLocalActivities<Activities>(bookkeepingOptions);
// Histories recorded before local bookkeeping scheduled these as ordinary activities.
const remoteBookkeeping = proxyActivities<Activities>(bookkeepingOptions);
const LOCAL_BOOKKEEPING_PATCH = 'local-bookkeeping';
// Histories recorded before a run's closing activity also claimed the next run called
// startRunCycle separately after every run.
const CLAIM_ON_CLOSE_PATCH = 'claim-on-close';
// Histories recorded before an interrupt that arrived ahead of its run (or during a resume's
// claim) was kept: such an interrupt used to be dropped.
const EARLY_INTERRUPT_PATCH = 'early-interrupt';
// Histories recorded before a pause gave way to a run the log starts while it waits (the log
// ended the paused run: an operator reset the workflow to inside the pause). Such a claim used
// to be dropped, leaving that run claimed and never executed.
const PAUSE_SUPERSEDED_PATCH = 'pause-superseded';
// Histories recorded before a pause's close could end its run (an interrupt the api accepted
// while the turn's last calls ran) and claim the next one, as a run's end does.
const PAUSE_ENDS_ON_INTERRUPT_PATCH = 'pause-ends-on-interrupt';
// Histories recorded before a deleted session's workflow ended (it idled forever).
const DELETED_SESSION_ENDS_PATCH = 'deleted-session-ends';
// Histories recorded before a run's end continued as new when Temporal suggested it: a session
// whose queue never emptied then grew one execution's history without bound.
const CONTINUE_AT_RUN_END_PATCH = 'continue-at-run-end';
// Histories recorded before an interrupt that came first won over the run timer firing while
// the interrupted call was still being cancelled (the run ended run_timeout).
const INTERRUPT_BEFORE_TIMEOUT_PATCH = 'interrupt-before-timeout';
// Histories recorded before a pause's deadline looked for results the api had accepted but
// whose signal had not come (late or lost): the run was abandoned with its results stored.
const ABANDON_RECHECK_PATCH = 'abandon-recheck';
const bookkeepingActivities = {
  startRunCycle: (input: Parameters<Activities['startRunCycle']>[0]) =>
    (patched(LOCAL_BOOKKEEPING_PATCH) ? localBookkeeping : remoteBookkeeping).startRunCycle(input),
  finishRunCycle: (input: Parameters<Activities['finishRunCycle']>[0]) =>
    (patched(LOCAL_BOOKKEEPING_PATCH) ? localBookkeeping : remoteBookkeeping).finishRunCycle(input),
};

// The event log must record how a run ended even when the workflow itself is being
// cancelled (an operator's `temporal workflow cancel`), so bookkeeping is never cancelled.
const bookkeeping = {
  startRunCycle: (input: Parameters<Activities['startRunCycle']>[0]) => CancellationScope.nonCancellable(() => bookkeepingActivities.startRunCycle(input)),
  finishRunCycle: (input: Parameters<Activities['finishRunCycle']>[0]) => CancellationScope.nonCancellable(() => bookkeepingActivities.finishRunCycle(input)),
};

const modelActivities = (summary: string) =>
  proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    // Model activities heartbeat every second; a worker that died is noticed within 10 s.
    heartbeatTimeout: '10 seconds',
    // An interrupt waits until the activity has aborted its upstream call.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry,
    summary,
  });

type CycleEnd =
  | { kind: 'stop'; stopReason: Exclude<StopReason, 'client_tool_use'> }
  | { kind: 'error'; code: RunErrorCode }
  | { kind: 'pause'; toolCalls: Array<{ id: string; name: string }> };

export async function sessionWorkflow(input: SessionWorkflowInput): Promise<void> {
  const { sessionId } = input;
  // This execution, recorded on the cycles it claims (a reset or continue-as-new starts another).
  const execution = workflowInfo().runId;
  let signalled = true; // signalWithStart delivered the first signal
  let currentRunId: string | undefined;
  let currentScope: CancellationScope | undefined;
  let interruptRequested = false;
  // The api claims a run when it accepts the message, so an interrupt can name a run this
  // workflow has not started yet (its signal came with the message's, or while the previous
  // run's close claimed it). Kept here, it cancels that run as soon as it starts.
  let interruptedRunId: string | undefined;
  // The memo's title, carried into the next execution: continue-as-new would otherwise start it
  // with the memo the workflow was started with, before any rename.
  let title = workflowInfo().memo?.title;
  // Set when a run ended with continue-as-new suggested: the next execution takes over from there,
  // with the run the close claimed (see CONTINUE_AT_RUN_END_PATCH).
  let continueAfterRun = false;

  setHandler(eventsAppendedSignal, () => {
    signalled = true;
  });
  setHandler(titleChangedSignal, (renamed) => {
    title = renamed;
    upsertMemo({ title });
  });
  const continueAsNew = (next: SessionWorkflowInput = { sessionId }) => makeContinueAsNewFunc<typeof sessionWorkflow>(title === undefined ? {} : { memo: { title } })(next);
  setHandler(interruptSignal, (runId) => {
    if (runId && runId !== currentRunId) {
      interruptedRunId = runId;
      return;
    }
    if (!currentRunId) return; // no run in flight: nothing to cancel
    interruptRequested = true;
    currentScope?.cancel();
  });

  const setStatus = (status: string) => upsertSearchAttributes({ SessionStatus: [status] });
  // Current details are query state, not history: setting them adds no command to replay.
  setCurrentDetails('Idle: no run in flight');

  /** Runs turns until the run stops, fails or pauses for client tools. */
  async function runCycle(
    cycle: ActiveCycle,
    turnsSoFar: number,
    contextTokensSoFar: number,
    activeMsSoFar: number,
  ): Promise<{ end: CycleEnd; usage: RunUsage; contextTokens: number; turns: number }> {
    let usage = zeroUsage();
    // The run's latest turn so far: a resumed cycle that ends before its first turn reports it.
    let contextTokens = contextTokensSoFar;
    let turns = turnsSoFar;
    if (cycle.toolsetError) return { end: { kind: 'error', code: cycle.toolsetError }, usage, contextTokens, turns };

    const scope = new CancellationScope();
    currentScope = scope;
    // The claim found this run's interrupt already in the log (its signal is late or lost).
    if (cycle.interrupted) interruptRequested = true;
    // An interrupt that came before this cycle's scope existed (ahead of the run, or during a
    // resume's claim) cancels the cycle before its first turn.
    if (interruptRequested && patched(EARLY_INTERRUPT_PATCH)) scope.cancel();
    let timedOut = false;
    // The run's timer counts active execution across its cycles (a pause for client tools
    // does not count: run_abandoned covers that); workflow time is deterministic.
    const timerScope = startTimer(Math.max(1, cycle.limits.runTimeoutMs - activeMsSoFar), () => {
      // An interrupt that came first ends the run as the user asked, though its call is still
      // being cancelled (that takes up to a heartbeat) when the timer fires.
      if (interruptRequested && patched(INTERRUPT_BEFORE_TIMEOUT_PATCH)) return;
      timedOut = true;
      scope.cancel();
    });

    // The spec: after a compacting cycle, context_tokens is the post-compaction estimate.
    let compactionEstimate: number | undefined;
    const reportedTokens = () => compactionEstimate ?? contextTokens;
    try {
      const end = await scope.run(async (): Promise<CycleEnd> => {
        let compactedThisTurn = false;
        for (;;) {
          if (turns >= cycle.limits.maxIterations) return { kind: 'stop', stopReason: 'max_iterations' };
          const turn = turns + 1;
          setCurrentDetails(`Run ${cycle.runId}: turn ${turn} on ${cycle.model}`);
          const outcome = await modelActivities(`turn ${turn} · ${cycle.model}`).callModel({ sessionId, runId: cycle.runId, turn, cycleKey: cycle.cycleKey, unbilledCreditsNano: usage.credits_nano });
          usage = addUsage(usage, outcome.usage);
          if (outcome.needsCompaction) {
            if (compactedThisTurn) return { kind: 'error', code: 'context_exceeded' };
            const compacted = await modelActivities(`compaction before turn ${turn}`).compactContext({ sessionId, runId: cycle.runId, turn });
            usage = addUsage(usage, compacted.usage);
            contextTokens = compacted.contextTokens;
            compactionEstimate = compacted.contextTokens;
            if (!compacted.fits) return { kind: 'error', code: 'context_exceeded' };
            compactedThisTurn = true;
            continue;
          }
          compactedThisTurn = false;
          turns = turn;
          contextTokens = outcome.contextTokens;
          if (outcome.stop !== 'tool_use') return { kind: 'stop', stopReason: outcome.stop };
          for (const call of outcome.serverToolCalls) {
            await modelActivities(`tool ${call.name}`).runServerTool({ sessionId, runId: cycle.runId, call });
          }
          if (outcome.clientToolCalls.length > 0) return { kind: 'pause', toolCalls: outcome.clientToolCalls };
        }
      });
      return { end, usage, contextTokens: reportedTokens(), turns };
    } catch (error) {
      if (isCancellation(error)) {
        const code: CycleEnd = timedOut
          ? { kind: 'error', code: 'run_timeout' }
          : interruptRequested
            ? { kind: 'stop', stopReason: 'user_cancelled' }
            : { kind: 'error', code: 'run_interrupted' };
        return { end: code, usage, contextTokens: reportedTokens(), turns };
      }
      return { end: { kind: 'error', code: errorCodeOf(error) }, usage, contextTokens: reportedTokens(), turns };
    } finally {
      timerScope.cancel();
      currentScope = undefined;
    }
  }

  /**
   * A run from its first cycle until it ends (pauses for client tools included). Returns
   * the cycle the closing activity claimed next, if it was asked to (see CLAIM_ON_CLOSE_PATCH).
   */
  async function executeRun(first: ActiveCycle): Promise<RunCycle | undefined> {
    let cycle = first;
    let turns = 0;
    let contextTokens = 0;
    let activeMs = 0;
    let next: RunCycle | undefined;
    currentRunId = cycle.runId;
    interruptRequested = interruptedRunId === cycle.runId && patched(EARLY_INTERRUPT_PATCH);
    setStatus('running');
    for (;;) {
      const cycleStarted = workflowClockMs();
      const result = await runCycle(cycle, turns, contextTokens, activeMs);
      activeMs += workflowClockMs() - cycleStarted;
      turns = result.turns;
      contextTokens = result.contextTokens;
      // (The close bills what the log holds for the cycle: the workflow's own sum is for the credit check only.)
      const close = (outcome: { stopReason: StopReason } | { errorCode: RunErrorCode }, extra: { toolCalls?: Array<{ id: string; name: string }>; cycleKey?: string } = {}) => {
        // A run's end also claims the next run in the same activity, unless the workflow is
        // being cancelled (which starts nothing new); so does a pause that ends its run.
        continueAfterRun = !extra.toolCalls && workflowInfo().continueAsNewSuggested && patched(CONTINUE_AT_RUN_END_PATCH);
        const claims = (!extra.toolCalls || patched(PAUSE_ENDS_ON_INTERRUPT_PATCH)) && patched(CLAIM_ON_CLOSE_PATCH) && !CancellationScope.current().consideredCancelled;
        const claimCycleKey = claims ? uuid4() : undefined;
        return bookkeeping.finishRunCycle({
          sessionId,
          runId: cycle.runId,
          cycleKey: extra.cycleKey ?? cycle.cycleKey,
          contextTokens: result.contextTokens,
          ...outcome,
          ...(extra.toolCalls ? { toolCalls: extra.toolCalls } : {}),
          endRun: !extra.toolCalls,
          ...(claimCycleKey ? { claimCycleKey, execution } : {}),
        });
      };
      if (result.end.kind !== 'pause') {
        next = await close(result.end.kind === 'stop' ? { stopReason: result.end.stopReason } : { errorCode: result.end.code });
        break;
      }
      const ended = await close({ stopReason: 'client_tool_use' }, { toolCalls: result.end.toolCalls });
      if (ended !== undefined) {
        // An interrupt was waiting: the close ended the run instead of pausing it, and claimed
        // what goes next.
        next = ended;
        break;
      }
      setStatus('idle');
      setCurrentDetails(`Run ${cycle.runId}: paused, waiting for client tool results (${result.end.toolCalls.map((call) => call.name).join(', ')})`);
      // Paused: wait for every pending result, an interrupt, or give up.
      const resumed = await waitForToolResults(cycle);
      if (resumed.kind === 'superseded') {
        // The paused run's end is already in the log; the claimed run goes next.
        next = resumed.cycle;
        break;
      }
      if (resumed.kind !== 'resume') {
        // The pause's usage was billed when it closed; this closing event carries what came after it (normally nothing).
        const outcome = resumed.kind === 'interrupted' ? { stopReason: 'user_cancelled' as const } : { errorCode: resumed.kind === 'cancelled' ? ('run_interrupted' as const) : ('run_abandoned' as const) };
        next = await close(outcome, { cycleKey: uuid4() });
        break;
      }
      cycle = resumed.cycle;
      setStatus('running');
    }
    currentRunId = undefined;
    return next;
  }

  async function waitForToolResults(
    paused: ActiveCycle,
  ): Promise<{ kind: 'resume'; cycle: ActiveCycle } | { kind: 'superseded'; cycle: ActiveCycle } | { kind: 'interrupted' } | { kind: 'abandoned' } | { kind: 'cancelled' }> {
    let abandoned = false;
    const timerScope = startTimer(paused.limits.abandonAfterMs, () => {
      abandoned = true;
    });
    try {
      for (;;) {
        try {
          await condition(() => signalled || interruptRequested || abandoned);
        } catch (error) {
          if (isCancellation(error)) return { kind: 'cancelled' }; // the workflow is being cancelled
          throw error;
        }
        if (interruptRequested) return { kind: 'interrupted' };
        // At the deadline, results the api accepted just before it (their signal late or lost)
        // still resume the run: it is abandoned only when the log holds none.
        const deadline = !signalled;
        if (deadline && !patched(ABANDON_RECHECK_PATCH)) return { kind: 'abandoned' };
        signalled = false;
        const cycle = await bookkeeping.startRunCycle({ sessionId, cycleKey: uuid4(), holding: paused.runId, execution });
        if (cycle.kind === 'resume' && cycle.runId === paused.runId) return { kind: 'resume', cycle };
        // A claimed start while paused means the log no longer holds this pause (no message is
        // accepted while a run is paused): run what the log holds.
        if (cycle.kind === 'start' && patched(PAUSE_SUPERSEDED_PATCH)) return { kind: 'superseded', cycle };
        if (deadline) return { kind: 'abandoned' };
      }
    } finally {
      timerScope.cancel();
    }
  }

  // The first claim of an execution that did not continue from another: a run the log shows in
  // flight was left by an execution that is gone (terminated), and is closed by that claim.
  let freshExecution = !workflowInfo().continuedFromExecutionRunId;
  let carried: RunCycle | undefined = input.claimed;
  try {
    for (;;) {
      await condition(() => signalled || workflowInfo().continueAsNewSuggested);
      if (signalled) {
        signalled = false;
        // `holding: null`: between runs; a run another execution started is that ended execution's.
        // A run the previous execution's last close claimed is this execution's to run (claimed
        // anew, the log would show it started by an execution that no longer holds it).
        let cycle: RunCycle = carried ?? (await bookkeeping.startRunCycle({ sessionId, cycleKey: uuid4(), holding: null, execution, ...(freshExecution ? { freshExecution } : {}) }));
        carried = undefined;
        freshExecution = false;
        while (cycle.kind === 'start') {
          const claimed = await executeRun(cycle);
          setStatus('idle');
          setCurrentDetails('Idle: no run in flight');
          // A cancelled workflow runs nothing more; see the catch below. A run the closing
          // activity claimed just before the cancellation arrived still goes through
          // executeRun, whose first activity fails at once and closes it as run_interrupted.
          if (CancellationScope.current().consideredCancelled && claimed?.kind !== 'start') throw new CancelledFailure('session workflow cancelled');
          // (Not when the workflow is being cancelled: a run the close claimed goes through executeRun, as above.)
          if (continueAfterRun && !CancellationScope.current().consideredCancelled) {
            // Temporal suggests a fresh history: continue at this run boundary, even with messages
            // queued, handing over the run the close claimed (and an interrupt already sent for it).
            await condition(allHandlersFinished);
            const handover = claimed?.kind === 'start' ? { ...claimed, ...(interruptedRunId === claimed.runId ? { interrupted: true as const } : {}) } : undefined;
            await continueAsNew({ sessionId, ...(handover ? { claimed: handover } : {}) });
          }
          // A message that arrived during the run starts the next one at once.
          cycle = claimed ?? (await bookkeeping.startRunCycle({ sessionId, cycleKey: uuid4(), holding: null, execution }));
        }
        // A deleted session gets no more events: its workflow is done (the delete signals it).
        if (cycle.kind === 'none' && cycle.sessionDeleted && patched(DELETED_SESSION_ENDS_PATCH)) {
          setStatus('deleted');
          return;
        }
      }
      if (workflowInfo().continueAsNewSuggested && !signalled) {
        await condition(allHandlersFinished);
        await continueAsNew();
      }
    }
  } catch (error) {
    // Cancelling the workflow (an operator's `temporal workflow cancel`) ends it after the
    // run in flight was closed as `run_interrupted`. A message that arrived meanwhile must
    // not be lost: carry on in a fresh execution instead of closing.
    if (isCancellation(error) && signalled) await continueAsNew();
    throw error;
  }
}

/**
 * Workflow time in ms: the start time of the current workflow task, recorded in the history,
 * so replay reads the same values. The TypeScript SDK exposes it only through the sandbox's
 * deterministic `Date`; this name says which clock is meant (never the machine's).
 */
function workflowClockMs(): number {
  return Date.now();
}

/** A durable timer in its own scope: `onFire` runs when it fires; cancel the scope to drop it. */
function startTimer(ms: number, onFire: () => void): CancellationScope {
  const scope = new CancellationScope();
  void scope
    .run(() => sleep(ms))
    .then(onFire)
    .catch(() => undefined);
  return scope;
}

/** An activity failure's ApplicationFailure type names the run error code. */
function errorCodeOf(error: unknown): RunErrorCode {
  let cause: unknown = error;
  while (cause && typeof cause === 'object') {
    if (cause instanceof ApplicationFailure && isRunErrorCode(cause.type)) return cause.type;
    if ((cause as { name?: string }).name === 'TimeoutFailure') return 'upstream_timeout';
    cause = (cause as { cause?: unknown }).cause;
  }
  return 'internal_error';
}
