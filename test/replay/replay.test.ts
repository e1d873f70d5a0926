import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Runtime, Worker, type ReplayResult } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { WORKFLOWS_PATH } from '../../src/temporal/worker';
import { historyFromJson, type History } from './history-json';

/**
 * Recorded histories of representative session runs (test/replay/histories, written by
 * `npx tsx scripts/record-history.ts`) must replay against the current workflow code: a
 * change to workflows/ that would break running sessions fails here, before a deploy.
 */
const DIR = path.join(__dirname, 'histories');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
const load = (file: string): History => historyFromJson(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));
const histories = () => files.map((file) => ({ workflowId: `replay/${path.basename(file, '.json')}`, history: load(file) }));

async function replayAll(workflowsPath: string, input = histories()): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories({ workflowsPath }, input)) results.push(result);
  return results;
}

beforeAll(() => {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // already installed in this process
  }
});

test('the recorded histories cover the representative runs', () => {
  expect(files).toEqual([
    'client-tool-resume.claim-on-close.json',
    'client-tool-resume.json',
    'client-tool-resume.pause-ends-on-interrupt.json',
    'compaction.claim-on-close.json',
    'compaction.json',
    'continue-at-run-end.json',
    'interrupt-before-start.json',
    'interrupt-in-log.json',
    'interrupt.claim-on-close.json',
    'interrupt.json',
    'plain.claim-on-close.json',
    'plain.json',
    'server-tool.claim-on-close.json',
    'server-tool.json',
    'session-deleted.json',
    'upstream-error.claim-on-close.json',
    'upstream-error.json',
  ]);
  const activities = (file: string) =>
    (load(file).events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter((name): name is string => !!name);
  expect(activities('compaction.json')).toContain('compactContext');
  // A deleted session's workflow completes (patched: 'deleted-session-ends').
  expect(load('session-deleted.json').events?.at(-1)?.workflowExecutionCompletedEventAttributes).toBeDefined();
  expect(activities('server-tool.json')).toContain('runServerTool');
  expect(activities('client-tool-resume.json').filter((name) => name === 'finishRunCycle')).toHaveLength(2);
  // Histories of the current version: bookkeeping runs as local activities, and a run's
  // closing activity also claims the next run (one local activity per run end, not two).
  const markers = (file: string) => (load(file).events ?? []).map((e) => e.markerRecordedEventAttributes?.markerName).filter((name): name is string => !!name);
  expect(markers('plain.claim-on-close.json').filter((name) => name === 'core_patch').length).toBeGreaterThanOrEqual(2);
  expect(activities('plain.claim-on-close.json')).toEqual(['callModel', 'callModel']);
  // An interrupt that named its run before the run started: the `early-interrupt` branch, no model call.
  const patches = (file: string) =>
    (load(file).events ?? [])
      .map((e) => e.markerRecordedEventAttributes)
      .filter((marker) => marker?.markerName === 'core_patch')
      .map((marker) => JSON.parse(Buffer.from(marker!.details!['patch-data']!.payloads![0]!.data as Uint8Array).toString()).id as string);
  expect(patches('interrupt-before-start.json')).toContain('early-interrupt');
  // A pause's close that may end its run (an interrupt waiting) and claim the next: the pause held here.
  expect(patches('client-tool-resume.pause-ends-on-interrupt.json')).toContain('pause-ends-on-interrupt');
  expect(patches('client-tool-resume.claim-on-close.json')).not.toContain('pause-ends-on-interrupt');
  expect(activities('interrupt-before-start.json')).toEqual([]);
  // An interrupt the claim found in the log (its signal never came): cancelled before any model call.
  const claims = (file: string) =>
    (load(file).events ?? [])
      .map((e) => e.markerRecordedEventAttributes)
      .filter((marker) => marker?.markerName === 'core_local_activity')
      .map((marker) => JSON.parse(Buffer.from(marker!.details!['result']!.payloads![0]!.data as Uint8Array).toString()));
  expect(claims('interrupt-in-log.json')[0]).toMatchObject({ kind: 'start', interrupted: true });
  expect(activities('interrupt-in-log.json')).toEqual([]);
  // Continue-as-new at a run's end (Temporal suggested it while messages were queued): the
  // `continue-at-run-end` branch, the execution ending by continuing as new with the run its
  // last close claimed handed over.
  expect(patches('continue-at-run-end.json')).toContain('continue-at-run-end');
  const continued = load('continue-at-run-end.json').events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
  expect(JSON.parse(Buffer.from(continued!.input!.payloads![0]!.data as Uint8Array).toString())).toMatchObject({ claimed: { kind: 'start', runId: expect.any(String) } });
  expect(patches('plain.claim-on-close.json')).not.toContain('continue-at-run-end');
});

test('every recorded history replays against the current workflow code', async () => {
  const results = await replayAll(WORKFLOWS_PATH);
  expect(results.map((r) => r.workflowId)).toEqual(files.map((f) => `replay/${path.basename(f, '.json')}`));
  expect(results.filter((r) => r.error).map((r) => `${r.workflowId}: ${r.error}`)).toEqual([]);
});

test('an incompatible workflow change fails replay with a determinism violation; the same change behind patched() passes', async () => {
  const broken = await replayAll(path.join(__dirname, 'fixtures/timer-before-claim.ts'));
  expect(broken).toHaveLength(files.length);
  for (const result of broken) expect(result.error).toBeInstanceOf(DeterminismViolationError);

  const gated = await replayAll(path.join(__dirname, 'fixtures/timer-before-claim-patched.ts'));
  expect(gated.filter((r) => r.error).map((r) => `${r.workflowId}: ${r.error}`)).toEqual([]);
});

test('a tampered history (a different activity recorded) fails replay', async () => {
  const history = load('plain.json');
  const scheduled = history.events!.find((e) => e.activityTaskScheduledEventAttributes)!;
  scheduled.activityTaskScheduledEventAttributes!.activityType = { name: 'callModel' }; // the code schedules startRunCycle here
  const [result] = await replayAll(WORKFLOWS_PATH, [{ workflowId: 'replay/tampered', history }]);
  expect(result!.error).toBeInstanceOf(DeterminismViolationError);
  expect(String(result!.error)).toMatch(/startRunCycle|callModel|nondetermin/i);
});
