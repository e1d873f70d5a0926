import Anthropic from '@anthropic-ai/sdk';
import { startGatewayEnv, usageRowFor, type GatewayEnv } from './gateway-env';
import { json } from '../../support/factories';
import { setBalanceNano } from '../../support/credits';

let env: GatewayEnv;
let client: Anthropic;
beforeAll(async () => {
  env = await startGatewayEnv({ MESSAGES_BODY_LIMIT_BYTES: String(64 * 1024), MODERATION_BLOCKLIST: 'forbidden-word' });
  client = new Anthropic({ apiKey: env.tenant.key, baseURL: env.api.url, maxRetries: 0 });
});
afterAll(() => env.close());

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${env.api.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': env.tenant.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify(body),
  });

const weatherTool = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } };

describe('the official anthropic client against the gateway', () => {
  test("the client's request id is the gateway's, on answers and on errors", async () => {
    const { data, response, request_id } = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(data.type).toBe('message');
    expect(request_id).toBe(response.headers.get('x-request-id'));
    const failure = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).requestID).toEqual(expect.stringMatching(/^[0-9a-f-]{32,36}$/));
  });

  test("the client's models.list()/retrieve() read Anthropic's models, newest first, paged; dated snapshots answer as their model", async () => {
    const all = [];
    for await (const model of client.models.list({ limit: 2 })) all.push(model);
    expect(all.map((model) => model.id)).toEqual(['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-opus-4-1', 'claude-sonnet-4-0', 'claude-3-5-haiku-latest']);
    expect(all[0]).toEqual({ type: 'model', id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-10-01T00:00:00Z' });
    expect(all[4]!.display_name).toBe('Claude 3.5 Haiku');
    const page = await client.models.list({ limit: 2, after_id: 'claude-sonnet-4-5' });
    expect(page.data.map((model) => model.id)).toEqual(['claude-opus-4-1', 'claude-sonnet-4-0']);
    expect(page).toMatchObject({ first_id: 'claude-opus-4-1', last_id: 'claude-sonnet-4-0', has_more: true });
    expect((await client.models.retrieve('claude-sonnet-4-20250514')).display_name).toBe('Claude Sonnet 4.0');
    const unknown = await client.models.retrieve('gpt-4o').catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    // Without the SDK's header, the snapshot is found as the catalog's record, under its own id.
    expect(((await (await fetch(`${env.api.url}/v1/models/claude-sonnet-4-20250514`)).json()) as { id: string }).id).toBe('anthropic/claude-sonnet-4-20250514');
    // A dated snapshot is its model, sent upstream as named.
    const message = await client.messages.create({ model: 'claude-sonnet-4-20250514', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.model).toBe('claude-sonnet-4-20250514');
    expect((env.sim.requests.at(-1)!.body as { model: string }).model).toBe('claude-sonnet-4-20250514');
  });

  test('plain message, bare and prefixed model names', async () => {
    for (const model of ['claude-sonnet-4-5', 'anthropic/claude-sonnet-4-5']) {
      const message = await client.messages.create({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hello native' }] });
      expect(message).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'end_turn', stop_sequence: null, content: [{ type: 'text', text: 'You said: Hello native' }] });
      expect(message.usage).toMatchObject({ output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    }
  });

  test('streamed message with thinking: native events and the final message', async () => {
    const stream = client.messages.stream({
      model: 'claude-haiku-4-5',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'think first [[think]] [[tokens:6]]' }],
    });
    const types = new Set<string>();
    let startUsage: Anthropic.Usage | undefined;
    stream.on('streamEvent', (event) => {
      types.add(event.type === 'content_block_delta' ? `${event.type}:${event.delta.type}` : event.type);
      // A copy: the SDK keeps updating the message_start object as the stream goes on.
      if (event.type === 'message_start') startUsage = { ...event.message.usage };
    });
    const final = await stream.finalMessage();
    // As Anthropic's own stream: the prompt's tokens are known, and sent, at message_start.
    expect(startUsage!.input_tokens).toBeGreaterThan(0);
    expect(startUsage!.input_tokens).toBe(final.usage.input_tokens);
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(final.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about: think first', signature: expect.stringMatching(/^sim-sig-/) });
    expect((final.content[1] as Anthropic.TextBlock).text.split(' ')).toHaveLength(6);
    expect(final.usage.output_tokens).toBe(10);
    expect([...types]).toEqual(
      expect.arrayContaining(['message_start', 'content_block_start', 'content_block_delta:thinking_delta', 'content_block_delta:signature_delta', 'content_block_delta:text_delta', 'content_block_stop', 'message_delta', 'message_stop']),
    );
    const sent = env.sim.requests.at(-1)!.body as Record<string, unknown>;
    expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
  });

  test("web search: the answer's citations and the search count reach the client, plain and streamed (citations_delta)", async () => {
    const request = {
      model: 'claude-haiku-4-5',
      max_tokens: 200,
      tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 3 }],
      messages: [{ role: 'user' as const, content: 'what is new [[web-search:2]]' }],
    };
    const plain = await client.messages.create(request);
    const streamed = await client.messages.stream(request).finalMessage();
    for (const message of [plain, streamed]) {
      // Blocks as Anthropic framed them: an uncited lead-in, each search (its call and its results), then the
      // cited text (a stream must not merge them).
      expect(message.content.map((block) => block.type)).toEqual(['text', 'server_tool_use', 'web_search_tool_result', 'server_tool_use', 'web_search_tool_result', 'text']);
      expect(message.content[1]).toMatchObject({ type: 'server_tool_use', name: 'web_search', input: { query: expect.any(String) } });
      expect(message.content[0]).not.toHaveProperty('citations');
      const text = message.content[5] as Anthropic.TextBlock;
      expect(text.citations).toHaveLength(2);
      expect(text.citations![0]).toMatchObject({ type: 'web_search_result_location', url: 'https://example.com/result-1', title: 'Result 1' });
      expect(message.usage.server_tool_use).toEqual({ web_search_requests: 2 });
    }
    // The model searches at most as often as the tool allows; the count billed follows.
    const capped = await client.messages.create({ ...request, tools: [{ ...request.tools[0]!, max_uses: 1 }] });
    expect(capped.usage.server_tool_use).toEqual({ web_search_requests: 1 });
  });

  test('a stream that breaks after its searches ran is billed their fee (counted from the search results it showed)', async () => {
    const request = {
      model: 'claude-haiku-4-5',
      max_tokens: 200,
      stream: true,
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      // message_start, ping, the lead-in (3 events) and both searches (10 events): cut before the cited text and the count.
      messages: [{ role: 'user', content: 'what is new [[web-search:2]] [[tokens:30]] [[cut:15]]' }],
    };
    const response = await post(request);
    const text = await response.text();
    expect(text.match(/"type":"server_tool_use"/g)).toHaveLength(2);
    expect(text).not.toContain('message_delta');
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    const searchFee = 2n * 1_000_000_000n; // 10 USD per 1,000 searches, at 1 credit = 0.01 USD
    expect(BigInt(row.credits_nano)).toBeGreaterThan(searchFee);
  });

  test('cache writes are reported by lifetime (usage.cache_creation), plain and streamed', async () => {
    const request = { model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user' as const, content: `${'context '.repeat(50)} [[cache-write:4]] [[cache-write-1h:5]]` }] };
    for (const message of [await client.messages.create(request), await client.messages.stream(request).finalMessage()]) {
      expect(message.usage).toMatchObject({ cache_creation_input_tokens: 9, cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 5 } });
    }
  });

  test('tool call round trip, plain and streamed (input_json_delta)', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'weather? [[tool:get_weather {"city":"Oslo"}]]' }];
    const first = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 200, tools: [weatherTool], messages });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Oslo' } });

    const streamed = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 200, tools: [weatherTool], messages });
    const deltas: string[] = [];
    streamed.on('inputJson', (partial) => deltas.push(partial));
    const final = await streamed.finalMessage();
    expect(deltas.length).toBeGreaterThan(1);
    expect(final.content.find((block) => block.type === 'tool_use')).toMatchObject({ input: { city: 'Oslo' } });

    const second = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 200,
      tools: [weatherTool],
      messages: [...messages, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'snow' }] }],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Tool results: snow' }]);
  });

  test('errors arrive as the SDK error classes', async () => {
    await expect(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: '[[error:429]]' }] })).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    await expect(client.messages.create({ model: 'openai/gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('native protocol details', () => {
  test('anthropic-version and anthropic-beta are forwarded; cache_control passes through; usage is metered', async () => {
    const response = await post(
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        system: [{ type: 'text', text: 'long system prompt', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'cached [[cache-write:3]]' }],
        service_tier: 'auto',
      },
      { 'anthropic-beta': 'prompt-caching-2024-07-31' },
    );
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.usage.cache_creation_input_tokens).toBe(3);
    const upstream = env.sim.requests.at(-1)!;
    expect(upstream.headers['anthropic-version']).toBe('2023-06-01');
    expect(upstream.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(upstream.body).toMatchObject({ model: 'claude-sonnet-4-5', system: [{ cache_control: { type: 'ephemeral' } }], service_tier: 'auto' });
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ model: 'anthropic/claude-sonnet-4-5', cache_creation_input_tokens: '3' });
  });

  test('errors use the native envelope, typed by status', async () => {
    const cases: Array<[unknown, Record<string, string>, number, string]> = [
      [{ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }] }, {}, 400, 'invalid_request_error'],
      [{ model: 'google/gemini-2.5-pro', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, {}, 404, 'not_found_error'],
      [{ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': 'svc_short' }, 401, 'authentication_error'],
      // Claude 4.5 takes a temperature or top_p, not both (Anthropic refuses the pair).
      [{ model: 'claude-sonnet-4-5', max_tokens: 5, temperature: 0.5, top_p: 0.9, messages: [{ role: 'user', content: 'x' }] }, {}, 400, 'invalid_request_error'],
    ];
    for (const [body, headers, status, type] of cases) {
      const response = await post(body, headers);
      expect(response.status).toBe(status);
      expect(await json(response)).toEqual({ type: 'error', error: { type, message: expect.any(String), request_id: response.headers.get('x-request-id') } });
    }
    // An Anthropic-defined tool the gateway does not forward: the message says what it takes.
    const tool = await post({ model: 'claude-sonnet-4-5', max_tokens: 5, tools: [{ type: 'bash_20250124', name: 'bash' }], messages: [{ role: 'user', content: 'x' }] });
    expect(tool.status).toBe(400);
    expect((await json(tool)).error.message).toMatch(/tools\.0: unsupported tool: the gateway takes custom tools .* and web_search_\* server tools/);
    const overloaded = await post({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: '[[error:529]]' }] });
    expect(overloaded.status).toBe(529);
    expect((await json(overloaded)).error.type).toBe('overloaded_error');
  });

  test('a body over the configured limit is refused as request_too_large', async () => {
    const response = await post({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] });
    expect(response.status).toBe(413);
    expect((await json(response)).error.type).toBe('request_too_large');
  });

  test('a stream cut midway ends with a native error event, which the SDK raises', async () => {
    const response = await post({ model: 'claude-haiku-4-5', max_tokens: 500, stream: true, messages: [{ role: 'user', content: '[[tokens:30]] [[cut:8]]' }] });
    const text = await response.text();
    expect(text).toContain('event: message_start');
    expect(text.trim().split('\n\n').at(-1)).toMatch(/^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    expect(text).not.toContain('message_stop');
    const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 500, messages: [{ role: 'user', content: '[[tokens:30]] [[cut:8]]' }] });
    await expect(stream.finalMessage()).rejects.toThrow();
  });

  test('an exhausted balance: 402 in the native envelope, nothing sent upstream', async () => {
    await setBalanceNano(env.api.deps.db, env.tenant.projectId, 0n, [env.api.deps]);
    const before = env.sim.requests.length;
    try {
      const response = await post({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
      expect(response.status).toBe(402);
      expect(await json(response)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/credit/) } });
      expect(env.sim.requests.length).toBe(before);
    } finally {
      await setBalanceNano(env.api.deps.db, env.tenant.projectId, 1_000_000_000_000n, [env.api.deps]);
    }
  });

  test.each([
    [429, 'rate_limit_error'],
    [400, 'invalid_request_error'],
    [529, 'overloaded_error'],
  ])('an error event mid-stream (upstream %i) keeps its native type', async (status, type) => {
    const response = await post({ model: 'claude-haiku-4-5', max_tokens: 500, stream: true, messages: [{ role: 'user', content: `[[tokens:30]] [[stream-error:${status}]]` }] });
    const text = await response.text();
    expect(text).toContain('event: message_start');
    const last = text.trim().split('\n\n').at(-1)!;
    expect(last.split('\n')[0]).toBe('event: error');
    expect(JSON.parse(last.split('\n')[1]!.slice('data: '.length)).error.type).toBe(type);
  });
});

test('a tool whose input_schema is not a usable JSON Schema is 400 in the native envelope', async () => {
  const response = await post({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'f', input_schema: { type: 'notatype' } }] });
  expect(response.status).toBe(400);
  const body = await json(response);
  expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  expect(body.error.message).toMatch(/^tools\.0\.input_schema: /);
});

test('a stream that fails before its first event is a 502 in the native envelope, not a 200 stream', async () => {
  const response = await post({ model: 'claude-haiku-4-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x [[cut:0]]' }] });
  expect(response.status).toBe(502);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await json(response)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
});

test('tool results may hold documents and search results (forwarded as sent, and moderated)', async () => {
  const turn = (inner: Record<string, unknown>) => ({
    model: 'claude-haiku-4-5',
    max_tokens: 50,
    tools: [{ name: 'f', input_schema: { type: 'object' } }],
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [inner] }] },
    ],
  });
  const document = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'the result' }, title: 'r' };
  const ok = await post(turn(document));
  expect(ok.status).toBe(200);
  const sent = env.sim.requests.at(-1)!.body as { messages: Array<{ content: Array<{ content?: unknown }> }> };
  expect(sent.messages[2]!.content[0]!.content).toEqual([document]);
  const search = { type: 'search_result', source: 'https://example.com', title: 'x', content: [{ type: 'text', text: 'found' }] };
  expect((await post(turn(search))).status).toBe(200);
  expect((await post(turn({ ...search, content: [{ type: 'text', text: 'the forbidden-word' }] }))).status).toBe(403);
});

describe('moderation', () => {
  test('text inside blocks forwarded as sent (a text document, a search result) is moderated too; nothing goes upstream', async () => {
    const blocks = [
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a note about the FORBIDDEN-WORD' } },
      { type: 'search_result', source: 'https://example.com', title: 'result', content: [{ type: 'text', text: 'forbidden-word inside' }] },
    ];
    for (const block of blocks) {
      const before = env.sim.requests.length;
      const response = await post({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: [block, { type: 'text', text: 'summarize' }] }] });
      expect(response.status).toBe(403);
      expect(JSON.stringify(await json(response)).toLowerCase()).not.toContain('forbidden-word');
      expect(env.sim.requests.length).toBe(before);
    }
    const allowed = await post({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a harmless note' } }, { type: 'text', text: 'summarize' }] }] });
    expect(allowed.status).toBe(200);
  });

  test('tool descriptions and an assistant tool_use input are moderated too', async () => {
    const tool = (description: string) => ({ name: 'f', description, input_schema: { type: 'object' } });
    const bodies = [
      { tools: [tool('say FORBIDDEN-WORD')], messages: [{ role: 'user', content: 'hi' }] },
      {
        tools: [tool('a tool')],
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: { q: 'forbidden-word' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
        ],
      },
    ];
    for (const body of bodies) {
      const before = env.sim.requests.length;
      const response = await post({ model: 'claude-haiku-4-5', max_tokens: 50, ...body });
      expect(response.status).toBe(403);
      expect(env.sim.requests.length).toBe(before);
    }
  });
});

test('errors on /v1/messages outside the route chain (a wrong method) use the native envelope too', async () => {
  const response = await fetch(`${env.api.url}/v1/messages`, { headers: { 'x-api-key': env.tenant.key } });
  expect(response.status).toBe(405);
  expect(await json(response)).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
  // A messages route the gateway does not serve: the SDK gets a NotFoundError it can read.
  const countTokens = await client.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
  expect(countTokens).toBeInstanceOf(Anthropic.NotFoundError);
  expect((countTokens as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
});
