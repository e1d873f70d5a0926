import { checkChatRequest, ChatCompletionRequest } from '../../../src/domain/chat';
import { findModel } from '../../../src/providers/catalog';
import { anthropicErrorStatus } from '../../../src/providers/anthropic/error-types';
import { toAnthropicRequest } from '../../../src/providers/anthropic/request';
import { toGoogleRequest } from '../../../src/providers/google/request';
import { toOpenAIRequest } from '../../../src/providers/openai/request';
import { chatToUnified } from '../../../src/providers/shapes/chat-to-unified';
import type { UnifiedRequest } from '../../../src/providers/types';

/** Requests the real providers refuse, caught or reshaped before they go upstream. */
const chat = (model: string, extra: Record<string, unknown>) => {
  const request = ChatCompletionRequest.parse({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  return checkChatRequest(request, findModel(model)!);
};
const unified = (model: string, extra: Partial<UnifiedRequest> = {}): UnifiedRequest => ({ model: findModel(model)!, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], ...extra });

test("OpenAI's reasoning models take no top_p or stop; its search models no top_p", () => {
  expect(chat('openai/gpt-5', { top_p: 0.5 })).toMatchObject({ param: 'top_p' });
  expect(chat('openai/o3', { stop: 'END' })).toMatchObject({ param: 'stop' });
  expect(chat('openai/gpt-5-mini', { stop: ['a'] })).toMatchObject({ param: 'stop' });
  expect(chat('openai/gpt-4o-search-preview', { top_p: 0.5 })).toMatchObject({ param: 'top_p' });
  expect(chat('openai/gpt-4o', { top_p: 0.5, stop: 'END' })).toBeUndefined();
  expect(chat('openai/gpt-5', { top_p: null, stop: null })).toBeUndefined();
});

test('Claude Opus 4.1 and the 4.5 models take temperature or top_p, not both', () => {
  for (const model of ['anthropic/claude-sonnet-4-5', 'anthropic/claude-haiku-4-5', 'anthropic/claude-opus-4-1']) {
    expect(chat(model, { temperature: 0.5, top_p: 0.9 })).toMatchObject({ param: 'top_p', message: expect.stringContaining('not both') });
    expect(chat(model, { temperature: 0.5 })).toBeUndefined();
    expect(chat(model, { top_p: 0.9 })).toBeUndefined();
  }
  expect(chat('anthropic/claude-sonnet-4-0', { temperature: 0.5, top_p: 0.9 })).toBeUndefined();
});

test('an effort gives way to a top_p below 0.95 (Anthropic refuses thinking with it)', () => {
  expect(toAnthropicRequest(unified('anthropic/claude-sonnet-4-0', { reasoning_effort: 'high', top_p: 0.5 }), false).thinking).toBeUndefined();
  expect(toAnthropicRequest(unified('anthropic/claude-sonnet-4-0', { reasoning_effort: 'high', top_p: 0.96 }), false).thinking).toMatchObject({ type: 'enabled' });
});

test('a chat text file is read as text; Anthropic and OpenAI refuse files other than PDF and text', () => {
  const file = (mediaType: string, data: string) => ({ type: 'file', file: { filename: 'f', file_data: `data:${mediaType};base64,${Buffer.from(data).toString('base64')}` } });
  const request = ChatCompletionRequest.parse({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: [file('text/plain', 'plain words'), { type: 'text', text: 'read it' }] }] });
  const model = findModel('anthropic/claude-haiku-4-5')!;
  expect(checkChatRequest(request, model)).toBeUndefined();
  const body = toAnthropicRequest(chatToUnified(request, model), false) as { messages: Array<{ content: unknown[] }> };
  expect(body.messages[0]!.content[0]).toEqual({ type: 'document', title: 'f', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } });

  const docx = { messages: [{ role: 'user', content: [file('application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'PK')] }] };
  expect(chat('anthropic/claude-haiku-4-5', docx)).toMatchObject({ param: 'messages.0.content.0', message: expect.stringContaining('PDF and text files only') });
  expect(chat('openai/gpt-4o', docx)).toMatchObject({ param: 'messages.0.content.0' });
  expect(chat('google/gemini-2.5-flash', docx)).toBeUndefined();
  expect(chat('openai/gpt-4o', { messages: [{ role: 'user', content: [file('application/pdf', '%PDF')] }] })).toBeUndefined();
});

test('a tool schema without a top-level type goes upstream as an object schema', () => {
  const tools: UnifiedRequest['tools'] = [{ type: 'function', name: 'f', input_schema: { properties: { a: { type: 'string' } } } }];
  const expected = { type: 'object', properties: { a: { type: 'string' } } };
  expect((toAnthropicRequest(unified('anthropic/claude-haiku-4-5', { tools }), false).tools as Array<{ input_schema: unknown }>)[0]!.input_schema).toEqual(expected);
  expect((toOpenAIRequest(unified('openai/gpt-4o', { tools }), false).tools as Array<{ function: { parameters: unknown } }>)[0]!.function.parameters).toEqual(expected);
  const google = toGoogleRequest(unified('google/gemini-2.5-flash', { tools })) as { tools: Array<{ functionDeclarations: Array<{ parametersJsonSchema: unknown }> }> };
  expect(google.tools[0]!.functionDeclarations[0]!.parametersJsonSchema).toEqual(expected);
});

test("tool_choice 'required' needs a function tool (web search alone is 400)", () => {
  expect(chat('openai/gpt-4o-search-preview', { tools: [{ type: 'web_search' }], tool_choice: 'required' })).toMatchObject({ param: 'tool_choice' });
  expect(chat('openai/gpt-4o-search-preview', { tools: [{ type: 'web_search' }], tool_choice: 'auto' })).toBeUndefined();
});

test('tool_choice and parallel_tool_calls go upstream only with function tools', () => {
  const searchOnly: Partial<UnifiedRequest> = { tools: [{ type: 'web_search' }], tool_choice: 'required', parallel_tool_calls: true };
  const openai = toOpenAIRequest(unified('openai/gpt-4o-search-preview', searchOnly), false);
  expect(openai).toMatchObject({ web_search_options: {} });
  expect(openai).not.toHaveProperty('tool_choice');
  expect(openai).not.toHaveProperty('parallel_tool_calls');
  expect(toGoogleRequest(unified('google/gemini-2.5-flash', searchOnly))).not.toHaveProperty('toolConfig');
  const withFunction: Partial<UnifiedRequest> = { tools: [{ type: 'function', name: 'f', input_schema: { type: 'object' } }], tool_choice: 'required', parallel_tool_calls: false };
  expect(toOpenAIRequest(unified('openai/gpt-4o', withFunction), false)).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false });
  expect(toGoogleRequest(unified('google/gemini-2.5-flash', withFunction))).toMatchObject({ toolConfig: { functionCallingConfig: { mode: 'ANY' } } });
});

test("Gemini gets a linked image's media type from its extension", () => {
  const image = (url: string): Partial<UnifiedRequest> => ({ messages: [{ role: 'user', content: [{ type: 'image', source: { kind: 'url', url } }] }] });
  const parts = (url: string) => (toGoogleRequest(unified('google/gemini-2.5-flash', image(url))) as { contents: Array<{ parts: unknown[] }> }).contents[0]!.parts[0];
  expect(parts('https://example.com/a/photo.JPG?x=1')).toEqual({ fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/a/photo.JPG?x=1' } });
  expect(parts('https://example.com/picture')).toEqual({ fileData: { fileUri: 'https://example.com/picture' } });
});

test("Anthropic's billing and timeout error types keep their statuses (an error event mid-stream carries only its type)", () => {
  expect(anthropicErrorStatus('billing_error')).toBe(402);
  expect(anthropicErrorStatus('timeout_error')).toBe(504);
  expect(anthropicErrorStatus('overloaded_error')).toBe(529);
  expect(anthropicErrorStatus('something_new')).toBe(500);
});
