import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import OpenAI from 'openai';
import { startApi } from '../../support/harness';
import { startGatewayEnv, usageRowFor, sleep, type GatewayEnv } from './gateway-env';
import { json } from '../../support/factories';
import { setBalanceNano } from '../../support/credits';
import { findModel } from '../../../src/providers/catalog';

let env: GatewayEnv;
let client: OpenAI;
beforeAll(async () => {
  env = await startGatewayEnv({ MODERATION_BLOCKLIST: 'forbidden-word,other term' });
  client = new OpenAI({ apiKey: env.tenant.key, baseURL: `${env.api.url}/v1`, maxRetries: 0 });
});
afterAll(() => env.close());

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${env.api.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe('the official openai client against the gateway', () => {
  test("messages the client's helpers return can be sent back on the next turn", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: '[[tool:lookup {"q":"x"}]] look it up' }];
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'lookup', strict: true, parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false } } },
    ];
    // stream().finalMessage() adds `parsed: null`; parse() adds `parsed_arguments` to tool calls.
    const streamed = await client.chat.completions.stream({ model: 'openai/gpt-4o-mini', messages, tools }).finalMessage();
    expect(streamed).toHaveProperty('parsed');
    const parsed = (await client.chat.completions.parse({ model: 'openai/gpt-4o-mini', messages, tools })).choices[0]!.message;
    expect(parsed.tool_calls![0]!.function).toHaveProperty('parsed_arguments');
    for (const assistant of [streamed, { ...parsed, annotations: [] }]) {
      const call = assistant.tool_calls![0]!;
      const next = await client.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        tools,
        messages: [...messages, assistant as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: 'found' }],
      });
      expect(next.choices[0]!.finish_reason).toBe('stop');
      const sent = env.sim.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
      expect(sent.messages[1]).not.toHaveProperty('parsed');
      expect(sent.messages[1]).not.toHaveProperty('annotations');
    }
  });

  test.each(['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash'])('plain completion on %s', async (model) => {
    const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello gateway' }] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(model);
    expect(completion.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'You said: Hello gateway' });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: 4 });
  });

  test.each(['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'google/gemini-2.0-flash'])('streamed completion on %s ends with usage and [DONE]', async (model) => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'stream me [[tokens:12]]' }],
      stream: true,
      // (include_obfuscation: an OpenAI option the SDK types; accepted, no effect.)
      stream_options: { include_usage: true, include_obfuscation: false },
    });
    let text = '';
    let finish: string | null = null;
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.split(' ')).toHaveLength(12);
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ completion_tokens: 12 });
  });

  test.each(['openai/gpt-4.1-nano', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-pro'])('tool call round trip on %s (plain and streamed)', async (model) => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather? [[tool:get_weather {"city":"Paris"}]]' }];
    const first = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });

    const streamed = client.chat.completions.stream({ model, messages, tools: [weatherTool] });
    const final = await streamed.finalChatCompletion();
    const streamedCall = final.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(JSON.parse(streamedCall.function.arguments)).toEqual({ city: 'Paris' });

    const second = await client.chat.completions.create({
      model,
      tools: [weatherTool],
      messages: [...messages, choice.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' }],
    });
    expect(second.choices[0]!.message.content).toBe('Tool results: sunny, 21C');
    expect(second.choices[0]!.finish_reason).toBe('stop');
  });

  test("a Gemini call's thought signature comes back in extra_content.google and goes upstream again with the call, plain and streamed", async () => {
    const model = 'google/gemini-2.5-flash';
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather? [[think]] [[tool:get_weather {"city":"Oslo"}]]' }];
    const plain = await client.chat.completions.create({ model, messages, tools: [weatherTool], reasoning_effort: 'low' });
    const streamed = await client.chat.completions.stream({ model, messages, tools: [weatherTool], reasoning_effort: 'low' }).finalChatCompletion();
    for (const completion of [plain, streamed]) {
      const call = completion.choices[0]!.message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall & { extra_content?: { google?: { thought_signature?: string } } };
      expect(call.extra_content).toEqual({ google: { thought_signature: expect.stringMatching(/^sim-sig-/) } });
    }
    const call = plain.choices[0]!.message.tool_calls![0]!;
    await client.chat.completions.create({ model, tools: [weatherTool], messages: [...messages, plain.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }] });
    const sent = env.sim.requests.at(-1)!.body as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> };
    const modelTurn = sent.contents.find((c) => c.role === 'model')!;
    expect(modelTurn.parts.find((p) => p.functionCall)).toMatchObject({ thoughtSignature: (call as { extra_content?: { google?: { thought_signature?: string } } }).extra_content!.google!.thought_signature });
  });

  test('a data: URL written in capitals (DATA:..;BASE64,) goes upstream inline, as its lower-case form does', async () => {
    const image = 'iVBORw0KGgo=';
    for (const [model, inline] of [
      ['anthropic/claude-haiku-4-5', (body: any) => body.messages[0].content[0].source],
      ['google/gemini-2.5-flash', (body: any) => body.contents[0].parts[0].inlineData],
    ] as const) {
      const response = await post({ model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `DATA:Image/PNG;BASE64,${image}` } }, { type: 'text', text: 'what is it' }] }] });
      expect(response.status).toBe(200);
      const sent = inline(env.sim.requests.at(-1)!.body);
      expect(JSON.stringify(sent)).toContain(image);
      expect(JSON.stringify(sent)).toContain('image/png');
      expect(JSON.stringify(sent)).not.toContain('DATA:');
    }
  });

  test("a model's refusal is message.refusal (content null), plain and streamed", async () => {
    const request = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'something bad [[refuse]]' }] };
    const plain = await client.chat.completions.create(request);
    const streamed = await client.chat.completions.stream(request).finalChatCompletion();
    for (const completion of [plain, streamed]) {
      expect(completion.choices[0]!.message).toMatchObject({ content: null, refusal: "I can't help with that." });
    }
    // Sent back as the SDK keeps it, the refusal stays in the conversation (OpenAI gets its own field).
    await client.chat.completions.create({ ...request, messages: [...request.messages, plain.choices[0]!.message, { role: 'user', content: 'ok then' }] });
    const sent = env.sim.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    expect(sent.messages[1]).toEqual({ role: 'assistant', content: null, refusal: "I can't help with that." });
    // Another provider's model declines in plain text: no refusal field to fill.
    const claude = await client.chat.completions.create({ ...request, model: 'anthropic/claude-haiku-4-5' });
    expect(claude.choices[0]!.message).toMatchObject({ content: "I can't help with that.", refusal: null });
  });

  test('an upstream error reaches the client as an APIError with the provider status', async () => {
    const failure = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: '[[error:429]]' }] }).catch((e) => e);
    expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
  });
});

describe('metering', () => {
  test('a call writes its usage row and debits the exact credits; streamed usage equals non-streamed', async () => {
    const body = { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'count me [[tokens:20]] [[cache-read:5]]' }] };
    const plain = await post(body, { 'x-application': 'svc-ai-playground' });
    expect(plain.status).toBe(200);
    const plainRow = await usageRowFor(env.api, plain.headers.get('x-request-id')!);
    const streamed = await post({ ...body, stream: true });
    await streamed.text();
    const streamedRow = await usageRowFor(env.api, streamed.headers.get('x-request-id')!);
    for (const field of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'credits_nano']) {
      expect(streamedRow[field]).toBe(plainRow[field]);
    }
    expect(plainRow).toMatchObject({ model: 'anthropic/claude-sonnet-4-5', operation: 'chat', output_tokens: '20', cache_read_input_tokens: '5', application: 'svc-ai-playground', auth_method: 'api_key' });
    const expected = Number(plainRow.input_tokens) * 300_000 + 20 * 1_500_000 + 5 * 30_000;
    expect(Number(plainRow.credits_nano)).toBe(expected);
    expect(streamedRow.application).toBe('unknown');
    const { rows } = await env.api.deps.db.query('SELECT sum(delta_nano)::text AS total FROM credit_ledger WHERE project_id = $1 AND kind = $2', [env.tenant.projectId, 'debit']);
    expect(BigInt(rows[0].total)).toBeLessThanOrEqual(-2n * BigInt(expected));
  });

  test.each([
    // [model, what the simulator is told, searches billed, the fee per search]
    ['anthropic/claude-haiku-4-5', '[[web-search:2]]', 2, 1_000_000_000],
    ['google/gemini-2.5-flash', '[[web-search:3]]', 1, 3_500_000_000], // Google bills the grounded prompt, not each query
    ['openai/gpt-4o-mini-search-preview', '', 1, 2_500_000_000], // each call to a search model searches
  ])('web search on %s is billed at the provider fee on top of the tokens, streamed or not', async (model, directive, searches, fee) => {
    const body = { model, messages: [{ role: 'user', content: `look it up ${directive}` }], tools: [{ type: 'web_search' }] };
    for (const stream of [false, true]) {
      const response = await post({ ...body, stream });
      expect(response.status).toBe(200);
      await response.text();
      const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
      const prices = findModel(model)!.pricing;
      const tokens = Number(row.input_tokens) * prices.input + Number(row.output_tokens) * prices.output;
      expect(Number(row.credits_nano)).toBe(tokens + searches * fee);
    }
  });

  test.each([
    // [model, where the cited text begins in the answer]: Anthropic cites its second text block
    // whole (after an uncited lead-in); OpenAI and Gemini cite the words after "You" (Gemini in UTF-8 bytes).
    ['anthropic/claude-haiku-4-5', 'From the search results: '.length],
    ['google/gemini-2.5-flash', 'You '.length],
    ['openai/gpt-4o-mini-search-preview', 'You '.length],
  ])('web pages a search on %s cites come back as url_citation annotations over the cited text, streamed or not', async (model, start) => {
    // Non-ASCII text after the cited span's start: a byte offset taken for a character index would show.
    const body = { model, messages: [{ role: 'user', content: 'café 🎉 naïve [[web-search:2]]' }], tools: [{ type: 'web_search' }] };
    const expected = (content: string) =>
      [1, 2].map((i) => ({ type: 'url_citation', url_citation: { start_index: start, end_index: content.length, url: `https://example.com/result-${i}`, title: `Result ${i}` } }));
    const plain = await json(await post(body));
    const message = plain.choices[0].message;
    expect(message.content).toMatch(/You said: café 🎉 naïve$/);
    expect(message.annotations).toEqual(expected(message.content));
    expect(message.content.slice(start)).toMatch(/^(You )?said: café 🎉 naïve$/);

    const chunks = (await (await post({ ...body, stream: true })).text())
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)));
    const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(message.content);
    expect(chunks.flatMap((chunk) => chunk.choices[0]?.delta.annotations ?? [])).toEqual(expected(content));
    // All in one chunk: the openai SDK keeps only the latest delta's annotations.
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.annotations)).toHaveLength(1);
    const final = await client.chat.completions.stream(body as Parameters<typeof client.chat.completions.stream>[0]).finalChatCompletion();
    expect(final.choices[0]!.message.annotations).toEqual(expected(content));
  });

  test("OpenAI's web_search_options (what its SDK sends) asks for search as the web_search tool does, its options forwarded where the provider has them", async () => {
    const location = { type: 'approximate', approximate: { city: 'Lyon', country: 'FR', timezone: 'Europe/Paris' } };
    const searched = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini-search-preview',
      messages: [{ role: 'user', content: 'news [[web-search:1]]' }],
      web_search_options: { search_context_size: 'low', user_location: location as never },
    });
    expect(searched.choices[0]!.message.annotations).toHaveLength(1);
    expect((env.sim.requests.at(-1)!.body as Record<string, unknown>).web_search_options).toEqual({ search_context_size: 'low', user_location: location });

    const claude = await post({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'news [[web-search:1]]' }], web_search_options: { user_location: location } });
    expect(claude.status).toBe(200);
    const tools = (env.sim.requests.at(-1)!.body as { tools: Array<Record<string, unknown>> }).tools;
    expect(tools).toEqual([expect.objectContaining({ name: 'web_search', user_location: { type: 'approximate', city: 'Lyon', country: 'FR', timezone: 'Europe/Paris' } })]);

    for (const [body, param] of [
      [{ model: 'anthropic/claude-haiku-4-5', web_search_options: { search_context_size: 'high' } }, 'web_search_options.search_context_size'],
      [{ model: 'google/gemini-2.5-flash', web_search_options: { user_location: location } }, 'web_search_options.user_location'],
      [{ model: 'openai/gpt-4o-mini', web_search_options: {} }, 'web_search_options'],
      [{ model: 'openai/gpt-4o-search-preview', web_search_options: {}, tools: [{ type: 'web_search' }] }, 'web_search_options'],
    ] as const) {
      const refused = await post({ ...body, messages: [{ role: 'user', content: 'hi' }] });
      expect(refused.status).toBe(400);
      expect((await json(refused)).error.message).toMatch(new RegExp(`^${param.replace(/\./g, '\\.')}: `));
    }
  });

  test('an answer that searched nothing has no annotations', async () => {
    const message = (await json(await post({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'web_search' }] }))).choices[0].message;
    expect(message).not.toHaveProperty('annotations');
  });

  test('Anthropic 1-hour cache writes are billed at twice the input price, the 5-minute ones at the cache-write price', async () => {
    const body = { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: `${'context '.repeat(100)} [[cache-write:30]] [[cache-write-1h:50]]` }] };
    for (const stream of [false, true]) {
      const response = await post({ ...body, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
      const text = await response.text();
      // The response names the cache writes (inside prompt_tokens), so the client can price them.
      const usage = stream ? JSON.parse(text.split('\n').filter((l) => l.startsWith('data: {')).at(-1)!.slice(6)).usage : JSON.parse(text).usage;
      expect(usage.prompt_tokens_details).toEqual({ cached_tokens: 0, cache_creation_tokens: 80, cache_creation_1h_tokens: 50 });
      const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
      expect(row.cache_creation_input_tokens).toBe('80');
      expect(Number(row.credits_nano)).toBe(Number(row.input_tokens) * 300_000 + Number(row.output_tokens) * 1_500_000 + 30 * 375_000 + 50 * 600_000);
    }
  });

  test('an exhausted balance is refused before any upstream call (402, not 429)', async () => {
    await setBalanceNano(env.api.deps.db, env.tenant.projectId, 0n, [env.api.deps]);
    const before = env.sim.requests.length;
    try {
      const response = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      expect(response.status).toBe(402);
      expect((await json(response)).error.type).toBe('insufficient_credits');
      expect(env.sim.requests.length).toBe(before);
    } finally {
      await env.api.deps.db.query('UPDATE project_credits SET balance_nano = 1000000000000 WHERE project_id = $1', [env.tenant.projectId]);
    }
  });
});

describe('validation', () => {
  const base = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] };
  test.each([
    ['temperature out of range', { ...base, temperature: 2.5 }, 'temperature'],
    ['temperature on a model that does not support it', { ...base, model: 'openai/o3', temperature: 1 }, 'temperature'],
    ['temperature above the anthropic range', { ...base, model: 'anthropic/claude-haiku-4-5', temperature: 1.5 }, 'temperature'],
    ['response_format the model does not accept', { ...base, model: 'anthropic/claude-haiku-4-5', response_format: { type: 'json_object' } }, 'response_format.type'],
    ['reasoning_effort outside the enum', { ...base, model: 'openai/o3', reasoning_effort: 'minimal' }, 'reasoning_effort'],
    ['reasoning_effort on a model without an enum', { ...base, reasoning_effort: 'low' }, 'reasoning_effort'],
    ['max_tokens above the catalog maximum', { ...base, max_tokens: 10_000_000 }, 'max_tokens'],
    ['max_tokens above the model maximum', { ...base, max_tokens: 20_000 }, 'max_tokens'],
    ['provider_options on anthropic', { ...base, model: 'anthropic/claude-haiku-4-5', provider_options: { x: 1 } }, 'provider_options'],
    ['provider_options swapping the model', { ...base, provider_options: { model: 'gpt-5' } }, 'provider_options.model'],
    ['provider_options replacing the messages', { ...base, provider_options: { messages: [{ role: 'user', content: 'unmoderated' }] } }, 'provider_options.messages'],
    ['provider_options lifting the token cap', { ...base, provider_options: { max_completion_tokens: 9_999_999 } }, 'provider_options.max_completion_tokens'],
    ['provider_options asking for a pricier tier', { ...base, provider_options: { service_tier: 'priority' } }, 'provider_options.service_tier'],
    ['google provider_options lifting the token cap (camelCase)', { ...base, model: 'google/gemini-2.5-flash', provider_options: { maxOutputTokens: 9_999_999 } }, 'provider_options.maxOutputTokens'],
    ['google provider_options out-of-range temperature (snake_case)', { ...base, model: 'google/gemini-2.5-flash', provider_options: { temperature: 9 } }, 'provider_options.temperature'],
    [
      'thinking_config with reasoning_effort on google',
      { ...base, model: 'google/gemini-2.5-flash', reasoning_effort: 'low', provider_options: { thinking_config: { thinking_budget: 100 } } },
      'provider_options.thinking_config',
    ],
    ['thinking_config on a google model that does not think', { ...base, model: 'google/gemini-2.0-flash', provider_options: { thinking_config: { thinking_budget: 2048 } } }, 'provider_options.thinking_config'],
    ['tools on a model without tools', { ...base, model: 'openai/gpt-4o-search-preview', tools: [weatherTool] }, 'tools.0'],
    ['web_search on a model without it', { ...base, tools: [{ type: 'web_search' }] }, 'tools.0'],
    ['a tool message that answers nothing', { ...base, messages: [{ role: 'tool', tool_call_id: 'x', content: 'r' }] }, 'messages.0.tool_call_id'],
    ['an unknown role', { ...base, messages: [{ role: 'robot', content: 'hi' }] }, 'messages.0.role'],
    ['an unknown field', { ...base, frequency_penalty: 1 }, undefined],
    ['tool_choice without tools', { ...base, tool_choice: 'required' }, 'tool_choice'],
    ['an image to a model without vision', { ...base, model: 'openai/gpt-4', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] }, 'messages.0.content.1'],
    ['an image URL of another scheme', { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['a data: URL that is not an image', { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:text/plain;base64,aGk=' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['an image data: URL that is not base64', { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,@@not base64@@' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['an image data: URL with nothing in it', { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['a file whose data: URL is not base64', { ...base, messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,%%%' } }] }] }, 'messages.0.content.0.file.file_data'],
    ['a file by file_id (no Files API here)', { ...base, messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }] }, 'file_id'],
    ['file_data that is not a base64 data: URL', { ...base, messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: 'JVBERi0x', filename: 'a.pdf' } }] }] }, 'file_data'],
  ])('%s → 400', async (_name, body, param) => {
    const response = await post(body);
    expect(response.status).toBe(400);
    const error = (await json(response)).error;
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 400, request_id: response.headers.get('x-request-id') });
    if (param) expect(error.message).toContain(param.startsWith('provider_options.') ? param : param.split('.')[0]);
  });

  test('an unknown model is 404; a missing key 401 with WWW-Authenticate', async () => {
    expect((await post({ ...base, model: 'openai/gpt-99' })).status).toBe(404);
    // A bare name is a malformed value (400), naming the model it would be.
    const bare = await post({ ...base, model: 'gpt-4.1' });
    expect(bare.status).toBe(400);
    expect((await json(bare)).error).toMatchObject({ type: 'invalid_request_error', message: 'model: must be <provider>/<model-name> (did you mean openai/gpt-4.1?); see GET /v1/models' });
    // A known model of the other catalog is the caller's mistake of kind, not an unknown one.
    for (const model of ['openai/gpt-image-1', 'openai/tts-1', 'openai/whisper-1']) {
      const media = await post({ ...base, model });
      expect(media.status).toBe(400);
      expect((await json(media)).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/is a media model/) });
    }
    const anonymous = await fetch(`${env.api.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(base) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
  });

  test('a provider-accepted request with accepted values passes through to the upstream', async () => {
    const response = await post({ ...base, model: 'google/gemini-2.5-flash', temperature: 1.5, provider_options: { thinking_config: { thinking_budget: 0 } }, max_tokens: 100 });
    expect(response.status).toBe(200);
    const sent = env.sim.requests.at(-1)!.body as { generationConfig: Record<string, unknown> };
    expect(sent.generationConfig).toMatchObject({ temperature: 1.5, maxOutputTokens: 100, thinkingConfig: { thinkingBudget: 0 } });
  });

  test('null means "not set", as in OpenAI\'s API (its SDK types these fields nullable): nothing of it goes upstream', async () => {
    const nulls = { temperature: null, top_p: null, max_tokens: null, max_completion_tokens: null, stream: null, stream_options: null, stop: null, tools: null, tool_choice: null, parallel_tool_calls: null, response_format: null, reasoning_effort: null, user: null, n: null };
    // o3 accepts no temperature at all: a null one is simply absent.
    const response = await client.chat.completions.create({ ...base, model: 'openai/o3', ...nulls } as never);
    expect(response.choices[0]!.message.content).toBeTruthy();
    const sent = env.sim.requests.at(-1)!.body as Record<string, unknown>;
    for (const field of ['temperature', 'top_p', 'tools', 'tool_choice', 'response_format', 'reasoning_effort', 'n']) expect(sent).not.toHaveProperty(field);
  });

  test('null message fields the SDK types nullable (name, tool_calls, audio, function_call) read as omitted; a set audio or function_call is 400', async () => {
    const messages = [
      { role: 'system', content: 'be brief', name: null },
      { role: 'user', content: 'hi', name: null },
      { role: 'assistant', content: 'hello', name: null, tool_calls: null, audio: null, function_call: null, refusal: null },
      { role: 'user', content: 'again' },
    ];
    const response = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages } as never);
    expect(response.choices[0]!.message.content).toBeTruthy();
    const sent = env.sim.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    for (const field of ['name', 'tool_calls', 'audio', 'function_call']) expect(sent.messages[2]).not.toHaveProperty(field);
    for (const [field, value] of [['audio', { id: 'audio_1' }], ['function_call', { name: 'f', arguments: '{}' }]] as const) {
      const refused = await post({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x', [field]: value }, { role: 'user', content: 'y' }] });
      expect(refused.status).toBe(400);
      expect((await json(refused)).error.message).toMatch(new RegExp(`^messages\\.1\\.${field}: ${field} .*not supported`));
    }
  });
});

test("documents as OpenAI `file` parts reach each provider in its own form (OpenAI file part, Anthropic document block, Gemini inline data)", async () => {
  const pdf = Buffer.from('%PDF-1.4 a tiny test document').toString('base64');
  const content = [
    { type: 'text' as const, text: 'Summarise the attached report.' },
    { type: 'file' as const, file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${pdf}` } },
  ];
  const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content }] });

  expect((await ask('openai/gpt-4o-mini')).choices[0]!.message.content).toBeTruthy();
  const openai = env.sim.requests.at(-1)!.body as { messages: Array<{ content: unknown }> };
  expect(openai.messages.at(-1)!.content).toEqual(expect.arrayContaining([{ type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${pdf}` } }]));

  await ask('anthropic/claude-haiku-4-5');
  const anthropic = env.sim.requests.at(-1)!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
  expect(anthropic.messages.at(-1)!.content).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf }, title: 'report.pdf' })]));

  await ask('google/gemini-2.5-flash');
  const google = env.sim.requests.at(-1)!.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
  expect(google.contents.at(-1)!.parts).toEqual(expect.arrayContaining([{ inlineData: { mimeType: 'application/pdf', data: pdf } }]));
});

test('data: URLs may carry parameters (RFC 2397); a text file is read in its charset, and one that is not text in it is 400', async () => {
  const text = (charset: string) => `data:text/plain${charset};base64,${Buffer.from('café naïve', 'latin1').toString('base64')}`;
  const ask = (content: unknown[]) => post({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: [{ type: 'text', text: 'read it' }, ...content] }] });

  expect((await ask([{ type: 'file', file: { filename: 'notes.txt', file_data: text(';charset=ISO-8859-1') } }])).status).toBe(200);
  const sent = env.sim.requests.at(-1)!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
  expect(sent.messages.at(-1)!.content).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'document', source: expect.objectContaining({ type: 'text', data: 'café naïve' }) })]));

  const pdf = Buffer.from('%PDF-1.4 x').toString('base64');
  expect((await ask([{ type: 'file', file: { file_data: `data:application/pdf;name=a.pdf;base64,${pdf}` } }])).status).toBe(200);
  expect((await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;name=x.png;base64,iVBORw0KGgo=' } }] }] })).status).toBe(200);

  const refused = await ask([{ type: 'file', file: { file_data: text('') } }]);
  expect(refused.status).toBe(400);
  expect((await json(refused)).error.message).toMatch(/file_data: the text file is not valid UTF-8 text/);
});

test('provider_options the gateway does not model reach the upstream as sent', async () => {
  const response = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], provider_options: { seed: 7, logit_bias: { '50256': -100 } } });
  expect(response.status).toBe(200);
  const sent = env.sim.requests.at(-1)!.body as Record<string, unknown>;
  expect(sent).toMatchObject({ model: 'gpt-4o', seed: 7, logit_bias: { '50256': -100 } });
});

test('a tool whose parameters are not a usable JSON Schema is 400 naming it, and nothing goes upstream', async () => {
  const before = env.sim.requests.length;
  for (const parameters of [{ type: 'notatype' }, { type: 'array' }, { type: 'object', required: 'a' }, { type: 'object', properties: { a: { type: 7 } } }]) {
    const response = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters } }] });
    expect(response.status).toBe(400);
    expect((await json(response)).error.message).toMatch(/^tools\.0\.function\.parameters: /);
  }
  expect(env.sim.requests.length).toBe(before);
  const fine = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } } }] });
  expect(fine.status).toBe(200);
});

test('tool schemas providers take pass: other drafts, references the gateway does not resolve, a reused $id', async () => {
  const withParameters = (parameters: Record<string, unknown>) => post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters } }] });
  expect((await withParameters({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object', properties: { a: { type: 'string' } } })).status).toBe(200);
  expect((await withParameters({ $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object' })).status).toBe(200);
  expect((await withParameters({ type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } })).status).toBe(200);
  // One caller's schema leaves nothing behind for the next (the schema checker is shared).
  const id = `https://example.com/${randomBytes(4).toString('hex')}.json`;
  const agentTool = (input_schema: Record<string, unknown>) =>
    fetch(`${env.api.url}/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ project_id: env.tenant.projectId, name: 'schemas', model: 'openai/gpt-4o', tools: [{ name: 't', input_schema }] }),
    });
  expect((await agentTool({ $id: id, type: 'object', properties: { a: { $ref: '#/nope' } } })).status).toBe(400);
  expect((await agentTool({ $id: id, type: 'object', properties: { a: { type: 'string' } } })).status).toBe(201);
  expect((await withParameters({ $id: id, type: 'object' })).status).toBe(200);
});

describe('moderation', () => {
  test('blocked content is 403 content_policy_violation that names no filter, and nothing goes upstream', async () => {
    const before = env.sim.requests.length;
    const response = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'tell me about the FORBIDDEN-WORD please' }] });
    expect(response.status).toBe(403);
    const body = await json(response);
    expect(body.error.type).toBe('content_policy_violation');
    expect(JSON.stringify(body).toLowerCase()).not.toContain('forbidden-word');
    expect(env.sim.requests.length).toBe(before);
  });

  test.each([
    ['a tool description', { tools: [{ type: 'function', function: { name: 'f', description: 'say FORBIDDEN-WORD', parameters: { type: 'object' } } }] }],
    ['a tool parameter description', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { q: { type: 'string', description: 'the forbidden-word' } } } } }] }],
    ['a response format schema', { response_format: { type: 'json_schema', json_schema: { name: 'r', description: 'FORBIDDEN-WORD', schema: { type: 'object' } } } }],
    ['an assistant tool call argument', { messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"q":"FORBIDDEN-WORD"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] }],
  ])('text in %s is moderated too', async (_where, extra) => {
    const before = env.sim.requests.length;
    const response = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hello' }], ...extra });
    expect(response.status).toBe(403);
    expect((await json(response)).error.type).toBe('content_policy_violation');
    expect(env.sim.requests.length).toBe(before);
  });
});

describe('upstream failures', () => {
  test('a provider error passes through with its own status and body', async () => {
    const response = await post({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: '[[error:529]]' }] });
    expect(response.status).toBe(529);
    expect(await json(response)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'simulated error 529' } });
    const limited = await post({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: '[[error:429]]' }] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
  });

  test('a redirect the transport cannot follow (no Location) is not relayed as a 3xx: 502 upstream_error', async () => {
    const response = await post({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: '[[error:302]]' }] });
    expect(response.status).toBe(502);
    expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 502 });
  });

  test("a provider error quoting the gateway's provider key is relayed without it, whole or masked", async () => {
    const providerKey = `sk-test-${randomBytes(16).toString('hex')}`;
    const keyed = await startApi({ OPENAI_BASE_URL: `${env.sim.url}/v1`, OPENAI_API_KEY: providerKey, RATE_LIMIT_ENABLED: 'false' });
    try {
      const response = await fetch(`${keyed.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: '[[bad-key]]' }] }),
      });
      expect(response.status).toBe(401);
      const text = await response.text();
      expect(text).toContain('Incorrect API key provided: [redacted]');
      expect(text).not.toContain(providerKey.slice(0, 8));
      expect(text).not.toContain(providerKey.slice(-4));
    } finally {
      await keyed.close();
    }
  });

  test('a stream cut midway ends with an error chunk, not a silent truncated 200, and bills what was produced', async () => {
    const response = await post({ model: 'openai/gpt-4o', stream: true, messages: [{ role: 'user', content: 'cut me [[tokens:40]] [[cut:10]]' }] });
    expect(response.status).toBe(200);
    const text = await response.text();
    const events = text.trim().split('\n\n').map((event) => event.replace(/^data: /, ''));
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!);
    expect(last.error).toMatchObject({ type: 'upstream_error', code: 502, request_id: response.headers.get('x-request-id') });
    const row = await usageRowFor(env.api, response.headers.get('x-request-id')!);
    expect(Number(row.output_tokens)).toBeGreaterThan(0);
  });

  test.each(['openai/gpt-4o', 'anthropic/claude-haiku-4-5', 'google/gemini-2.0-flash'])('%s: a stream that fails before its first event is a 502 like a non-streaming call, and is not billed', async (model) => {
    const response = await post({ model, stream: true, messages: [{ role: 'user', content: 'x [[cut:0]]' }] });
    expect(response.status).toBe(502);
    const body = await json(response);
    expect(body.error).toMatchObject({ type: 'upstream_error', code: 502, request_id: response.headers.get('x-request-id') });
    // A request that is billed writes its row before the answer ends; give a late one time anyway.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { rows } = await env.api.deps.db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [response.headers.get('x-request-id')]);
    expect(rows).toHaveLength(0);
  });

  test.each(['openai/gpt-4o', 'anthropic/claude-haiku-4-5'])('%s: a stream that breaks after it began but before the model wrote anything ends with the error chunk and is not billed (as a run\'s call is not)', async (model) => {
    const response = await post({ model, stream: true, messages: [{ role: 'user', content: 'x [[cut:1]]' }] });
    expect(response.status).toBe(200);
    const events = (await response.text()).trim().split('\n\n').map((event) => event.replace(/^data: /, ''));
    expect(JSON.parse(events.at(-1)!).error).toMatchObject({ type: 'upstream_error', code: 502 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { rows } = await env.api.deps.db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [response.headers.get('x-request-id')]);
    expect(rows).toHaveLength(0);
  });

  test.each(['openai/gpt-4o', 'anthropic/claude-haiku-4-5', 'google/gemini-2.0-flash'])('%s: a rate limit reported mid-stream stays a rate limit (429 in the error chunk)', async (model) => {
    const response = await post({ model, stream: true, messages: [{ role: 'user', content: '[[tokens:20]] [[stream-error:429]]' }] });
    const events = (await response.text()).trim().split('\n\n').map((event) => event.replace(/^data: /, ''));
    expect(JSON.parse(events.at(-1)!).error).toMatchObject({ code: 429 });
  });

  test('the openai client raises a mid-stream cut as an error', async () => {
    const stream = await client.chat.completions.create({ model: 'google/gemini-2.0-flash', stream: true, messages: [{ role: 'user', content: '[[tokens:30]] [[cut:5]]' }] });
    const consume = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(consume()).rejects.toThrow(/could not be reached|stream/);
  });

  test('a client that stops reading, then leaves while its stream is backed up, is still billed for its prompt and what was produced', async () => {
    const body = JSON.stringify({ model: 'anthropic/claude-haiku-4-5', stream: true, max_tokens: 64000, messages: [{ role: 'user', content: `${'a long prompt '.repeat(200)} [[tokens:64000]]` }] });
    const requestId = await new Promise<string>((resolve, reject) => {
      const call = request(`${env.api.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${env.tenant.key}`, 'content-type': 'application/json' } }, (response) => {
        response.pause(); // read nothing: the gateway's writes back up
        setTimeout(() => {
          call.destroy();
          resolve(String(response.headers['x-request-id']));
        }, 1000);
      });
      call.on('error', () => undefined);
      call.once('error', reject);
      call.end(body);
    });
    const row = await usageRowFor(env.api, requestId);
    expect(Number(row.input_tokens)).toBeGreaterThan(500);
    expect(Number(row.output_tokens)).toBeGreaterThan(0);
    expect(Number(row.credits_nano)).toBeGreaterThan(0);
  });

  test('a client that disconnects cancels the upstream request', async () => {
    const response = await post({ model: 'anthropic/claude-haiku-4-5', stream: true, messages: [{ role: 'user', content: 'slow [[tokens:200]] [[pace:20]]' }] });
    // Read a little, then cancel the body: the client closes its connection mid-stream.
    const reader = response.body!.getReader();
    await reader.read();
    const upstream = env.sim.requests.at(-1)!;
    expect(upstream.finished).toBe(false);
    await reader.cancel();
    for (let i = 0; i < 100 && !upstream.aborted; i++) await sleep(20);
    expect(upstream.aborted).toBe(true);
    expect(upstream.finished).toBe(false);
  });
});
