import { modelTools, roleOf, searchDeferredTools, toolErrorEnvelope, toolInputValidator, validateToolInput } from '../../../src/domain/run-tools';
import { buildConversation } from '../../../activities/run-context';
import { jsonSchemaError } from '../../../src/domain/json-schema';

const tools = [
  { name: 'book', label: 'reservations', description: 'books a table', defer_loading: true, input_schema: { type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'], additionalProperties: false } },
  { name: 'weather', description: 'weather', input_schema: { type: 'object' } },
  { type: 'echo', name: 'say' },
  { type: 'knowledge_base', name: 'docs', collection_id: 'col_1' },
];

test('deferred tools are listed only once loaded; search_tools appears when any are deferred', () => {
  expect(modelTools(tools, new Set(), { kbEnabled: true }).map((t) => t.name)).toEqual(['weather', 'say', 'col_1_search', 'col_1_fetch', 'search_tools']);
  expect(modelTools(tools, new Set(['book']), { kbEnabled: false }).map((t) => t.name)).toEqual(['book', 'weather', 'say', 'search_tools']);
});

test('roles of called names', () => {
  expect(roleOf(tools, 'book').kind).toBe('deferred');
  expect(roleOf(tools, 'weather').kind).toBe('client');
  expect(roleOf(tools, 'say').kind).toBe('echo');
  expect(roleOf(tools, 'col_1_fetch').kind).toBe('kb_fetch');
  expect(roleOf(tools, 'col_1_search').kind).toBe('kb_search');
  expect(roleOf(tools, 'docs_search').kind).toBe('kb_search'); // the name conversations used before
  // ... unless a tool of the agent has that exact name.
  expect(roleOf([...tools, { name: 'docs_search', input_schema: { type: 'object' } }], 'docs_search').kind).toBe('client');
  expect(roleOf(tools, 'search_tools').kind).toBe('search_tools');
  expect(roleOf(tools, 'nope').kind).toBe('unknown');
});

test('search over deferred tools matches name, label and description words', () => {
  expect(searchDeferredTools(tools, 'table').map((t) => t.name)).toEqual(['book']);
  expect(searchDeferredTools(tools, 'weather')).toEqual([]);
});

test('strict input validation names the offending field', () => {
  const schema = tools[0]!.input_schema!;
  expect(validateToolInput(schema, { seats: 2 })).toBeUndefined();
  expect(validateToolInput(schema, { seats: 'two' })).toEqual({ field: 'seats', message: 'seats must be integer' });
  expect(validateToolInput(schema, {})).toEqual({ field: 'seats', message: 'missing required field seats' });
  expect(validateToolInput(schema, { seats: 1, extra: true })).toEqual({ field: 'extra', message: 'unexpected field extra' });
  expect(JSON.parse(toolErrorEnvelope('invalid_input', 'bad', { field: 'seats', retryable: true }))).toEqual({ error: { code: 'invalid_input', message: 'bad', field: 'seats', retryable: true } });
});

test('a nested $id of one schema is not left behind for the next schema of another tenant', () => {
  const nested = 'https://victim.example/booking';
  const tenantA = { type: 'object', properties: { x: { $id: nested, type: 'string' } } };
  expect(validateToolInput(tenantA, { x: 'a' })).toBeUndefined();
  expect(jsonSchemaError({ $id: nested, type: 'object', properties: { seats: { type: 'integer' } } }, { compile: true })).toBeUndefined();
  expect(validateToolInput({ $id: nested, type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] }, {})).toEqual({ field: 'seats', message: 'missing required field seats' });
});

test('an $async schema is refused: its validator would answer with a promise, read as valid', () => {
  const schema = { $async: true, type: 'object', properties: { n: { type: 'integer' } } };
  expect(jsonSchemaError(schema, { compile: true })).toMatch(/\$async/);
  expect(validateToolInput(schema, { n: 'not a number' })?.message).toMatch(/cannot be used.*\$async/);
});

test('validateToolInput reads another declared draft as draft-07, and a schema that cannot compile leaves nothing behind for the next one with its $id', () => {
  const id = 'https://tenant.example/schemas/shared';
  const seats = { type: 'object', properties: { seats: { type: 'integer' } }, required: ['seats'] };
  expect(validateToolInput({ $schema: 'http://json-schema.org/draft-04/schema#', $id: id, ...seats }, { seats: 2 })).toBeUndefined();
  // draft-04 names its ids `id`: an unknown keyword in draft-07, ignored.
  const draft04 = { $schema: 'http://json-schema.org/draft-04/schema#', id: 'urn:booking', ...seats };
  expect(jsonSchemaError(draft04, { compile: true })).toBeUndefined();
  expect(validateToolInput(draft04, {})).toEqual({ field: 'seats', message: 'missing required field seats' });
  expect(validateToolInput({ $schema: 'https://json-schema.org/draft/2019-09/schema', ...seats }, { seats: 'x' })).toEqual({ field: 'seats', message: 'seats must be integer' });
  // Another tenant's schema with the same $id and a reference to nothing: reported, never thrown.
  expect(validateToolInput({ $id: id, type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }, { a: 1 })?.message).toMatch(/input schema cannot be used/);
  // ...and the first tenant's schema (changed, so not cached) still compiles under its $id.
  expect(validateToolInput({ $id: id, ...seats, additionalProperties: false }, { seats: 3 })).toBeUndefined();
  expect(() => toolInputValidator({ $id: id, type: 'object', properties: { a: { $ref: '#/nowhere' } } })).toThrow();
  expect(toolInputValidator({ $id: id, ...seats, description: 'again' })({ seats: 1 })).toBe(true);
});

test('the event log becomes alternating messages; unanswered calls get a synthetic result', () => {
  // Messages a run has claimed (the runtime's context never holds queued ones: see the next test).
  const event = (type: string, content: unknown[], seq: number) => ({ id: `e${seq}`, session_id: 's', seq: String(seq), type, content, attributes: {}, usage: null, error_code: null, run_id: 'r1', processed_at: new Date(seq), created_at: new Date(seq) });
  const conversation = buildConversation({
    agent: { id: 'a', model: 'm', system_prompt: 'be brief', temperature: null, max_tokens: null, reasoning_effort: null, tools: [], settings: null },
    summary: 'earlier stuff',
    events: [
      event('user.message', [{ type: 'text', text: 'hi' }], 1),
      event('system.message', [{ type: 'text', text: 'note' }], 2),
      event('agent.message', [{ type: 'thought', text: 'hmm' }, { type: 'text', text: 'calling' }], 3),
      event('agent.tool_use', [{ type: 'tool_use', id: 'c1', name: 'weather', input: {} }], 4),
      event('user.message', [{ type: 'text', text: 'never mind' }], 5),
    ],
  });
  expect(conversation.system.map((p) => p.text)).toEqual(['be brief', 'note']);
  expect(conversation.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  expect(conversation.messages[0]!.content).toHaveLength(2); // summary + hi
  expect(conversation.messages[1]!.content.map((p) => p.type)).toEqual(['text', 'tool-call']);
  expect(conversation.messages[2]!.content[0]).toMatchObject({ type: 'tool-result', tool_use_id: 'c1', is_error: true });
});

test('a message joins the conversation where the run that claimed it starts; one no run has claimed is left out', () => {
  const event = (type: string, seq: number, runId: string | null, content: unknown[] = []) => ({ id: `e${seq}`, session_id: 's', seq: String(seq), type, content, attributes: {}, usage: null, error_code: null, run_id: runId, processed_at: runId ? new Date(seq) : null, created_at: new Date(seq) });
  const text = (value: string) => [{ type: 'text', text: value }];
  const agent = { id: 'a', model: 'm', system_prompt: null, temperature: null, max_tokens: null, reasoning_effort: null, tools: [], settings: null };
  const log = [
    event('user.message', 1, 'r1', text('first')),
    event('session.status_running', 2, 'r1'),
    event('user.message', 3, 'r2', text('sent during r1')),
    event('agent.message', 4, 'r1', text('answer one')),
    event('session.status_idle', 5, 'r1'),
    event('session.status_running', 6, 'r2'),
  ];
  const texts = (events: typeof log) => buildConversation({ agent, events }).messages.map((m) => `${m.role}: ${m.content.map((p) => (p as { text: string }).text).join(' ')}`);
  expect(texts(log)).toEqual(['user: first', 'assistant: answer one', 'user: sent during r1']);
  // While r1 runs, the message queued behind it (not yet claimed) is not part of r1's conversation.
  const duringR1 = [log[0]!, log[1]!, { ...log[2]!, run_id: null, processed_at: null }];
  expect(texts(duringR1)).toEqual(['user: first']);
  // The api names the run of a queued message when it accepts it: still unprocessed, still left out.
  const namedButQueued = [log[0]!, log[1]!, { ...log[2]!, processed_at: null }];
  expect(texts(namedButQueued)).toEqual(['user: first']);
  // So is a system.message sent with (or after) a queued request: the run in flight does not follow it.
  const note = { ...event('system.message', 3, 'r2', text('answer in French')), processed_at: null };
  expect(buildConversation({ agent, events: [log[0]!, log[1]!, note] }).system).toEqual([]);
  expect(buildConversation({ agent, events: [log[0]!, log[1]!, { ...note, processed_at: new Date(3) }] }).system.map((p) => p.text)).toEqual(['answer in French']);
});

test('deferred tools loaded before the latest compaction stay loaded (their tool_loaded results are summarized away)', () => {
  const agent = { id: 'a', model: 'm', system_prompt: null, temperature: null, max_tokens: null, reasoning_effort: null, tools, settings: null };
  expect(buildConversation({ agent, summary: 'earlier', events: [] }).loadedTools).toEqual(new Set());
  const loaded = buildConversation({ agent, summary: 'earlier', summaryLoadedTools: ['book'], events: [] }).loadedTools;
  expect(loaded).toEqual(new Set(['book']));
  expect(modelTools(tools, loaded, { kbEnabled: true }).map((t) => t.name)).toContain('book');
});

test("signed thinking goes back only to the model that signed it, and only within the tool loop in progress", () => {
  const event = (type: string, seq: number, content: unknown[], attributes: Record<string, unknown> = {}) => ({ id: `e${seq}`, session_id: 's', seq: String(seq), type, content, attributes, usage: null, error_code: null, run_id: 'r1', processed_at: new Date(seq), created_at: new Date(seq) });
  const signed = { _thinking: { model: 'anthropic/claude-sonnet-4-5', blocks: [{ type: 'reasoning', text: 'hmm', signature: 'sig-1' }] } };
  const redacted = { _thinking: { model: 'anthropic/claude-sonnet-4-5', blocks: [{ type: 'redacted-reasoning', data: 'opaque' }] } };
  const log = [
    event('user.message', 1, [{ type: 'text', text: 'first' }]),
    event('agent.message', 2, [{ type: 'thought', text: 'hmm' }, { type: 'text', text: 'answer one' }], signed),
    event('user.message', 3, [{ type: 'text', text: 'second' }]),
    // A turn whose thinking was all redacted: no message, the thinking rides on its tool calls.
    event('agent.tool_use', 4, [{ type: 'tool_use', id: 'c1', name: 'lookup', input: {} }], redacted),
    event('user.tool_result', 5, [{ type: 'tool_result', tool_use_id: 'c1', content: 'found' }]),
  ];
  const agent = (model: string) => ({ id: 'a', model, system_prompt: null, temperature: null, max_tokens: null, reasoning_effort: null, tools: [], settings: null });
  const parts = (model: string) => buildConversation({ agent: agent(model), events: log }).messages.map((m) => `${m.role}: ${m.content.map((p) => p.type).join(',')}`);
  expect(parts('anthropic/claude-sonnet-4-5')).toEqual(['user: text', 'assistant: text', 'user: text', 'assistant: redacted-reasoning,tool-call', 'user: tool-result']);
  expect(parts('anthropic/claude-haiku-4-5')).toEqual(['user: text', 'assistant: text', 'user: text', 'assistant: tool-call', 'user: tool-result']);
  // A turn that only thought (cut short) is no message at all once its loop is over.
  const thoughtOnly = [log[0]!, event('agent.message', 2, [{ type: 'thought', text: 'hmm' }], signed), log[2]!];
  expect(buildConversation({ agent: agent('anthropic/claude-sonnet-4-5'), events: thoughtOnly }).messages.map((m) => m.role)).toEqual(['user']);
});

test("a pattern that backtracks catastrophically is cut off (the model is told), and patterns keep their full JSON Schema meaning", () => {
  const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } } };
  expect(jsonSchemaError(schema, { compile: true })).toBeUndefined();
  // With backtracking, 30 a's and a mismatch take seconds, and every one more doubles it.
  const started = Date.now();
  expect(validateToolInput(schema, { s: `${'a'.repeat(40)}!` })).toMatchObject({ message: expect.stringMatching(/could not be checked .* within 1000 ms/) });
  expect(Date.now() - started).toBeLessThan(5000);
  // Not given the time again: the schema's next input is refused at once.
  const again = Date.now();
  expect(validateToolInput(schema, { s: 'aaa' })).toMatchObject({ message: expect.stringMatching(/could not be checked/) });
  expect(Date.now() - again).toBeLessThan(100);
  expect(validateToolInput({ ...schema, description: 'another' }, { s: 'aaa' })).toBeUndefined();
  // Unicode mode, counted repeats, backreferences and lookaround all as ECMA-262 reads them.
  const matches = (pattern: string, value: string) => validateToolInput({ type: 'object', properties: { s: { type: 'string', pattern } } }, { s: value }) === undefined;
  expect(matches('^[😀]$', '😀')).toBe(true);
  expect(matches('^.$', '😀')).toBe(true);
  expect(matches('^\\p{L}+$', 'héllo')).toBe(true);
  expect(matches('^[0-9a-f]{40}$', 'a'.repeat(40))).toBe(true);
  expect(matches('^(a)\\1$', 'aa')).toBe(true);
  expect(matches('^x(?=y)', 'xy')).toBe(true);
  expect(matches('^[A-Z]{2}-\\d+$', 'ab-1')).toBe(false);
});
