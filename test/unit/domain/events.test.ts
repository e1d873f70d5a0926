import { planEvents, PostEventsSchema, toolResultErrorCode, ToolResultBlockSchema, type RunState, type SentEvent } from '../../../src/domain/events';

const idle: RunState = { active_run_id: null, pending_tool_use_ids: [], cancelled_tool_use_ids: [] };
const message = { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } as SentEvent;
const system = { type: 'system.message', content: [{ type: 'text', text: 'hi' }] } as SentEvent;
const result = (id: string, extra: Record<string, unknown> = {}) => ({ type: 'user.tool_result', content: [{ type: 'tool_result', tool_use_id: id, ...extra }] }) as SentEvent;
const options = { newRunId: 'run_new', asyncEnabled: true };

describe('planEvents', () => {
  test('a user.message on an idle session claims a run and wakes the workflow', () => {
    const plan = planEvents(idle, [message], options);
    expect(plan).toMatchObject({ ok: true, startedRunId: 'run_new', signal: { kind: 'events' }, runStarting: true, state: { active_run_id: 'run_new' } });
  });

  test('a user.message during a run keeps that run, and names the run that will answer it', () => {
    const plan = planEvents({ ...idle, active_run_id: 'run_old' }, [system, message], options);
    expect(plan).toMatchObject({ ok: true, state: { active_run_id: 'run_old' }, signal: { kind: 'events' } });
    expect(plan.ok && plan.startedRunId).toBeFalsy();
    expect(plan.ok && plan.append.map((e) => e.run_id)).toEqual(['run_new', 'run_new']);
  });

  test('events of a request without a user.message, or with asynchronous execution off, name no run', () => {
    const plan = planEvents({ ...idle, active_run_id: 'run_old' }, [system], options);
    expect(plan.ok && plan.append.map((e) => e.run_id)).toEqual([null]);
    const off = planEvents(idle, [message], { ...options, asyncEnabled: false });
    expect(off.ok && off.append.map((e) => e.run_id)).toEqual([null]);
  });

  test('async disabled: stored, nothing starts, nothing is signalled', () => {
    const plan = planEvents(idle, [message], { ...options, asyncEnabled: false });
    expect(plan).toMatchObject({ ok: true, state: idle, signal: null });
  });

  test('system.message alone never starts a run', () => {
    expect(planEvents(idle, [system], options)).toMatchObject({ ok: true, state: idle, signal: null, runStarting: false });
  });

  test('paused with a run in flight: messages are refused with 400', () => {
    const paused = { ...idle, active_run_id: 'r', pending_tool_use_ids: ['a'] };
    expect(planEvents(paused, [message], options)).toMatchObject({ ok: false, status: 400 });
    expect(planEvents(paused, [system], options)).toMatchObject({ ok: false, status: 400 });
  });

  test('pause outstanding without a run: synthetic cancelled results first, ids move to cancelled', () => {
    const plan = planEvents({ ...idle, pending_tool_use_ids: ['a', 'b'] }, [message], options);
    if (!plan.ok) throw new Error('expected ok');
    expect(plan.append.map((e) => [e.type, e.error_code ?? null, e.processed ?? false])).toEqual([
      ['user.tool_result', 'cancelled', true],
      ['user.tool_result', 'cancelled', true],
      ['user.message', null, false],
    ]);
    expect(plan.state).toEqual({ active_run_id: 'run_new', pending_tool_use_ids: [], cancelled_tool_use_ids: ['a', 'b'] });
  });

  test('tool results: cancelled 409, unknown 400, duplicates 400, accepted ones leave pending', () => {
    const paused = { active_run_id: 'r', pending_tool_use_ids: ['a', 'b'], cancelled_tool_use_ids: ['z'] };
    expect(planEvents(paused, [result('z')], options)).toMatchObject({ ok: false, status: 409 });
    expect(planEvents(paused, [result('q')], options)).toMatchObject({ ok: false, status: 400 });
    expect(planEvents(paused, [result('a'), result('a')], options)).toMatchObject({ ok: false, status: 400 });
    expect(planEvents(paused, [result('a')], options)).toMatchObject({ ok: true, state: { pending_tool_use_ids: ['b'] }, signal: { kind: 'events' } });
    // A run in flight has not paused yet (or a result already resumed it): the refusal says both.
    const early = planEvents({ ...idle, active_run_id: 'r1' }, [result('a')], options);
    expect(early).toMatchObject({ ok: false, status: 400, message: expect.stringContaining('already answered, or the run has not paused for it yet: results are taken once the run pauses, session.status_idle with stop_reason client_tool_use') });
    expect(planEvents(paused, [result('q')], options)).toMatchObject({ message: "tool use 'q' is not awaiting a result" });
  });

  test('interrupt: signals the run in flight, or nothing at all', () => {
    const interrupt = { type: 'user.interrupt' } as SentEvent;
    expect(planEvents({ ...idle, active_run_id: 'r1' }, [interrupt], options)).toMatchObject({ ok: true, signal: { kind: 'interrupt', runId: 'r1' }, runStarting: false });
    expect(planEvents(idle, [interrupt], options)).toMatchObject({ ok: true, signal: null, state: idle });
  });

  test('interrupting a paused run cancels its outstanding calls: their results are 409, the next message answers them once', () => {
    const interrupt = { type: 'user.interrupt' } as SentEvent;
    const paused: RunState = { active_run_id: 'r1', pending_tool_use_ids: ['t1', 't2'], cancelled_tool_use_ids: ['t0'] };
    const interrupted = planEvents(paused, [interrupt], options);
    if (!interrupted.ok) throw new Error('refused');
    expect(interrupted.state).toEqual({ active_run_id: 'r1', pending_tool_use_ids: ['t1', 't2'], cancelled_tool_use_ids: ['t0', 't1', 't2'] });
    expect(planEvents(interrupted.state, [result('t1')], options)).toMatchObject({ ok: false, status: 409 });
    // While the interrupted run is closing, a message is accepted and waits for its own run (no synthetic results yet: the close writes them).
    const meanwhile = planEvents(interrupted.state, [message], options);
    expect(meanwhile).toMatchObject({ ok: true, state: { active_run_id: 'r1' } });
    expect(meanwhile.ok && meanwhile.append.map((e) => e.type)).toEqual(['user.message']);
    // The run has closed (the worker clears active_run_id); the next message writes the synthetic results.
    const next = planEvents({ ...interrupted.state, active_run_id: null }, [message], options);
    if (!next.ok) throw new Error('refused');
    expect(next.append.filter((e) => e.type === 'user.tool_result')).toHaveLength(2);
    expect(next.state.cancelled_tool_use_ids).toEqual(['t0', 't1', 't2']);
  });
});

describe('toolResultErrorCode', () => {
  test('first failing block, unclassified without a code, null on success', () => {
    expect(toolResultErrorCode([{ type: 'tool_result', tool_use_id: 'a' }])).toBeNull();
    expect(toolResultErrorCode([{ type: 'tool_result', tool_use_id: 'a', is_error: true }, { type: 'tool_result', tool_use_id: 'b', is_error: true, error_code: 'timeout' }])).toBe('unclassified');
    expect(toolResultErrorCode([{ type: 'tool_result', tool_use_id: 'a' }, { type: 'tool_result', tool_use_id: 'b', is_error: true, error_code: 'declined' }])).toBe('declined');
  });

  test('a failed block the client sent without a code is stored with error_code unclassified; others as sent', () => {
    const blocks = [
      { type: 'tool_result', tool_use_id: 'a', content: 'ok' },
      { type: 'tool_result', tool_use_id: 'b', is_error: true, content: 'no' },
      { type: 'tool_result', tool_use_id: 'c', is_error: true, error_code: 'declined' },
    ].map((block) => ToolResultBlockSchema.parse(block));
    expect(blocks.map((b) => [b.is_error, b.error_code])).toEqual([[false, undefined], [true, 'unclassified'], [true, 'declined']]);
  });
});

describe('PostEventsSchema', () => {
  test('rejects mixing, a shared interrupt and named foreign types', () => {
    expect(PostEventsSchema.safeParse({ events: [message, result('a')] }).success).toBe(false);
    expect(PostEventsSchema.safeParse({ events: [{ type: 'user.interrupt' }, message] }).success).toBe(false);
    const foreign = PostEventsSchema.safeParse({ events: [{ type: 'user.define_outcome', content: [] }] });
    expect(foreign.error?.issues[0]?.message).toMatch(/not supported/);
    expect(PostEventsSchema.safeParse({ events: [message, system] }).success).toBe(true);
  });
});
