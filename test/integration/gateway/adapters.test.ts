import { loadConfig } from '../../../src/config';
import { createProviderRegistry, findModel, type ProviderRegistry, type StreamPart, type UnifiedRequest } from '../../../src/providers';
import { createOpenAIAdapter } from '../../../src/providers/openai/adapter';
import { ContextWindowExceededError, RateLimitError, ServerError, UpstreamConnectionError, UpstreamTimeoutError } from '../../../src/providers/errors';
import { ChatCompletionRequest } from '../../../src/domain/chat';
import { MessagesRequest } from '../../../src/domain/messages';
import { chatToUnified } from '../../../src/providers/shapes/chat-to-unified';
import { messagesToUnified } from '../../../src/providers/shapes/messages-to-unified';
import { unifiedToChat } from '../../../src/providers/shapes/unified-to-chat';
import { unifiedToMessages } from '../../../src/providers/shapes/unified-to-messages';
import { startTestSimulator, type Simulator } from '../../support/simulator';

let sim: Simulator;
let providers: ProviderRegistry;
beforeAll(async () => {
  sim = await startTestSimulator();
  providers = createProviderRegistry(loadConfig({ ENVIRONMENT: 'development', SIMULATOR_URL: sim.url, UPSTREAM_TIMEOUT_MS: '300' }));
});
afterAll(() => sim.close());

const MODELS = ['openai/gpt-4.1-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash'];
const tool = { type: 'function' as const, name: 'lookup', description: 'Look up a word', input_schema: { type: 'object', properties: { word: { type: 'string' } } } };
const request = (model: string, text: string, extra: Partial<UnifiedRequest> = {}): UnifiedRequest => ({
  model: findModel(model)!,
  system: [{ type: 'text', text: 'You are terse.' }],
  messages: [{ role: 'user', content: [{ type: 'text', text }] }],
  ...extra,
});

async function collect(parts: AsyncIterable<StreamPart>): Promise<StreamPart[]> {
  const out: StreamPart[] = [];
  for await (const part of parts) out.push(part);
  return out;
}

describe.each(MODELS)('%s adapter against the simulator', (model) => {
  test('non-streaming text with usage and the provider request path', async () => {
    const result = await providers.generate(request(model, 'Say hi [[tokens:7]]', { max_tokens: 50 }));
    expect(result.content).toEqual([{ type: 'text', text: 'lorem ipsum dolor sit amet consectetur adipiscing' }]);
    expect(result.finish_reason.unified).toBe('stop');
    expect(result.usage).toMatchObject({ output_tokens: 7, cache_read_input_tokens: 0 });
    expect(result.usage.input_tokens).toBeGreaterThan(0);
    const upstream = sim.requests.at(-1)!;
    expect(upstream.path).toBe({ openai: '/v1/chat/completions', anthropic: '/v1/messages', google: `/v1beta/models/${findModel(model)!.name}:generateContent` }[findModel(model)!.provider]);
  });

  test('streaming yields deltas and one finish whose usage equals the non-streamed call', async () => {
    const req = request(model, 'Stream [[tokens:9]] [[cache-read:3]]');
    const plain = await providers.generate(req);
    const parts = await collect(await providers.stream(req));
    expect(parts[0]!.type).toBe('stream-start');
    const text = parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : [])).join('');
    expect(text).toBe((plain.content[0] as { text: string }).text);
    const finish = parts.at(-1)!;
    expect(finish).toMatchObject({ type: 'finish', finish_reason: { unified: 'stop' } });
    expect((finish as { usage: unknown }).usage).toEqual(plain.usage);
    expect(plain.usage.cache_read_input_tokens).toBe(3);
  });

  test('tool call, then tool result, streaming and not', async () => {
    const req = request(model, 'define [[tool:lookup {"word":"gateway"}]]', { tools: [tool] });
    const first = await providers.generate(req);
    expect(first.finish_reason.unified).toBe('tool-calls');
    const call = first.content.find((p) => p.type === 'tool-call')!;
    expect(call).toMatchObject({ name: 'lookup', input: { word: 'gateway' } });
    const parts = await collect(await providers.stream(req));
    expect(parts.filter((p) => p.type === 'tool-call')).toEqual([expect.objectContaining({ name: 'lookup', input: { word: 'gateway' } })]);
    expect(parts.some((p) => p.type === 'tool-input-start')).toBe(true);
    const second = await providers.generate({
      ...req,
      messages: [...req.messages, { role: 'assistant', content: first.content as never }, { role: 'user', content: [{ type: 'tool-result', tool_use_id: (call as { id: string }).id, content: 'a thing' }] }],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Tool results: a thing' }]);
  });

  test('max_tokens truncates with finish length', async () => {
    const result = await providers.generate(request(model, '[[tokens:30]]', { max_tokens: 5 }));
    expect(result.finish_reason.unified).toBe('length');
    expect(result.usage.output_tokens).toBe(5);
  });

  test('upstream errors are typed by status: 429 with retryAfterMs, 503 retryable, 400 not', async () => {
    const limited = await providers.generate(request(model, '[[error:429]]')).catch((e) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited).toMatchObject({ status: 429, retryable: true, retryAfterMs: 1000, provider: findModel(model)!.provider });
    const down = await providers.generate(request(model, '[[error:503]]')).catch((e) => e);
    expect(down).toBeInstanceOf(ServerError);
    expect(down.retryable).toBe(true);
    const bad = await providers.generate(request(model, '[[error:400]]')).catch((e) => e);
    expect(bad.retryable).toBe(false);
  });

  test('a stream that breaks ends with an error part carrying the usage produced so far', async () => {
    const parts = await collect(await providers.stream(request(model, '[[tokens:40]] [[cut:12]]')));
    const last = parts.at(-1)!;
    expect(last.type).toBe('error');
    expect((last as { error: Error }).error).toBeInstanceOf(UpstreamConnectionError);
    expect((last as { usage: { output_tokens: number } }).usage.output_tokens).toBeGreaterThan(0);
    expect(parts.filter((p) => p.type === 'finish')).toHaveLength(0);
  });

  test('the timeout and an aborted signal stop the upstream call', async () => {
    await expect(providers.generate(request(model, '[[delay:2000]]'))).rejects.toBeInstanceOf(UpstreamTimeoutError);
    const controller = new AbortController();
    const parts = await providers.stream(request(model, '[[tokens:100]] [[pace:20]]'), { signal: controller.signal });
    const upstream = sim.requests.at(-1)!;
    const iterator = parts[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    const rest: StreamPart[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest.at(-1)!.type).toBe('error');
    for (let i = 0; i < 50 && !upstream.aborted; i++) await new Promise((r) => setTimeout(r, 20));
    expect(upstream.aborted).toBe(true);
  });
});

test.each(['openai/gpt-4', 'anthropic/claude-3-5-haiku-latest', 'google/gemini-2.0-flash-lite'])(
  'a prompt over the context window of %s is a ContextWindowExceededError (input tokens = characters / 4)',
  async (id) => {
    const patient = createProviderRegistry(loadConfig({ ENVIRONMENT: 'development', SIMULATOR_URL: sim.url }));
    const model = findModel(id)!;
    const fits = await patient.generate(request(id, 'x'.repeat(model.context_window * 4 - 200)));
    expect(fits.usage.input_tokens).toBeLessThanOrEqual(model.context_window);
    const overflow = await patient.generate(request(id, 'x'.repeat(model.context_window * 4 + 4))).catch((e) => e);
    expect(overflow).toBeInstanceOf(ContextWindowExceededError);
    expect(overflow).toMatchObject({ status: 400, retryable: false });
  },
);

describe('both public shapes cross providers', () => {
  test('an OpenAI-shape request with a tool round trip runs on an Anthropic model', async () => {
    const body = ChatCompletionRequest.parse({
      model: 'anthropic/claude-haiku-4-5',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"word":"x"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'result x' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const model = findModel(body.model)!;
    const result = await providers.generate(chatToUnified(body, model));
    const sent = sim.requests.at(-1)!.body as { system: unknown; messages: Array<{ role: string; content: Array<{ type: string }> }> };
    expect(sent.system).toEqual([{ type: 'text', text: 'be brief' }]);
    expect(sent.messages.map((m) => [m.role, m.content.map((c) => c.type)])).toEqual([
      ['user', ['text']],
      ['assistant', ['tool_use']],
      ['user', ['tool_result']],
    ]);
    expect(unifiedToChat(result, model.id).choices[0]!.message.content).toBe('Tool results: result x');
  });

  test.each(['openai/gpt-4o', 'google/gemini-2.0-flash'])('an Anthropic-shape request with a tool round trip runs on %s', async (id) => {
    const body = MessagesRequest.parse({
      model: id,
      max_tokens: 100,
      system: 'be brief',
      tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [{ type: 'text', text: 'let me look' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { word: 'y' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'result y' }] },
      ],
    });
    const model = findModel(id)!;
    const unified = messagesToUnified(body, model);
    const result = await providers.generate(unified);
    expect(unifiedToMessages(result, false)).toMatchObject({ type: 'message', stop_reason: 'end_turn', content: [{ type: 'text', text: 'Tool results: result y' }] });
    const parts = await collect(await providers.stream({ ...unified, messages: [...unified.messages.slice(0, 2), { role: 'user', content: [{ type: 'tool-result', tool_use_id: 'toolu_1', content: 'result y' }, { type: 'text', text: 'again [[tool:lookup {"word":"z"}]]' }] }] }));
    expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ name: 'lookup', input: { word: 'z' } });
  });
});

test('the OpenAI adapter works against any OpenAI-compatible base URL (vLLM, Ollama, llama.cpp style)', async () => {
  const adapter = createOpenAIAdapter({ baseUrl: `${sim.url}/compat/v1`, apiKey: 'local-key', timeoutMs: 2000 });
  const result = await adapter.generate(request('openai/gpt-4o-mini', 'hello compat'));
  expect(result.content).toEqual([{ type: 'text', text: 'You said: hello compat' }]);
  const upstream = sim.requests.at(-1)!;
  expect(upstream.path).toBe('/compat/v1/chat/completions');
  expect(upstream.headers.authorization).toBe('Bearer local-key');
});

test('in development without keys every provider defaults to the simulator; a key switches to the real provider', () => {
  expect(providers.baseUrls).toEqual({ openai: `${sim.url}/v1`, anthropic: sim.url, google: sim.url });
  const withKeys = createProviderRegistry(loadConfig({ ENVIRONMENT: 'development', OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GOOGLE_API_KEY: 'k' }));
  expect(withKeys.baseUrls).toEqual({ openai: 'https://api.openai.com/v1', anthropic: 'https://api.anthropic.com', google: 'https://generativelanguage.googleapis.com' });
  const production = createProviderRegistry(loadConfig({ ENVIRONMENT: 'production', GATEWAY_SECRET: 'production-secret-'.padEnd(48, 'x') }));
  expect(production.baseUrls.openai).toBe('https://api.openai.com/v1');
});

test.each([
  // [model, SSE events before the end marker]: OpenAI's [DONE] follows its usage chunk; Anthropic's
  // message_stop follows the message_delta holding the final usage.
  ['openai/gpt-4.1-mini', 13],
  ['anthropic/claude-sonnet-4-5', 15],
])('%s: a stream that breaks after the final usage bills the provider count, not an estimate', async (model, events) => {
  const plain = await providers.generate(request(model, 'Count these [[tokens:10]]'));
  const parts = await collect(await providers.stream(request(model, `Count these [[tokens:10]] [[cut:${events}]]`)));
  const last = parts.at(-1)!;
  expect(last.type).toBe('error');
  expect((last as { usage: { output_tokens: number } }).usage.output_tokens).toBe(plain.usage.output_tokens);
});
