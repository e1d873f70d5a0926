import { findModel } from '../../../src/providers/catalog';
import { isAnthropicContextOverflow } from '../../../src/providers/anthropic/adapter';
import { anthropicMaxTokens, toAnthropicRequest } from '../../../src/providers/anthropic/request';
import { THINKING_BUDGETS } from '../../../src/providers/reasoning';
import type { UnifiedRequest } from '../../../src/providers/types';

const model = findModel('anthropic/claude-haiku-4-5')!;
const request = (extra: Partial<UnifiedRequest> = {}): UnifiedRequest => ({ model, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], ...extra });

describe('anthropicMaxTokens: what the request body carries', () => {
  test('the given cap, else 8192, plus the thinking budget when thinking is on', () => {
    expect(anthropicMaxTokens(request({ max_tokens: 300 }))).toBe(300);
    expect(anthropicMaxTokens(request())).toBe(8192);
    expect(anthropicMaxTokens(request({ reasoning_effort: 'high' }))).toBe(8192 + THINKING_BUDGETS.high!);
    expect(anthropicMaxTokens(request({ model: findModel('anthropic/claude-3-5-haiku-latest')! }))).toBe(8192);
    for (const extra of [{}, { max_tokens: 300 }, { reasoning_effort: 'low' }]) {
      expect(toAnthropicRequest(request(extra), false).max_tokens).toBe(anthropicMaxTokens(request(extra)));
    }
  });
});

describe('isAnthropicContextOverflow', () => {
  const body = (message: string) => JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } });
  test('a prompt too long, and a prompt with its answer room past the window, are the window limit', () => {
    expect(isAnthropicContextOverflow(400, body('prompt is too long: 210000 tokens > 200000 maximum'))).toBe(true);
    expect(isAnthropicContextOverflow(400, body('input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again'))).toBe(true);
    expect(isAnthropicContextOverflow(400, body('messages: at least one message is required'))).toBe(false);
    expect(isAnthropicContextOverflow(529, body('prompt is too long'))).toBe(false);
  });
});

describe('thinking in a tool loop', () => {
  const loop = (assistant: UnifiedRequest['messages'][number]['content']): UnifiedRequest['messages'] => [
    { role: 'user', content: [{ type: 'text', text: 'look it up' }] },
    { role: 'assistant', content: assistant } as UnifiedRequest['messages'][number],
    { role: 'user', content: [{ type: 'tool-result', tool_use_id: 'toolu_1', content: 'found' }] },
  ];
  const call = { type: 'tool-call' as const, id: 'toolu_1', name: 'lookup', input: {} };

  test('an effort is left off when the tool turn came back without its signed thinking (the chat shape cannot carry it)', () => {
    expect(toAnthropicRequest(request({ reasoning_effort: 'low', messages: loop([call]) }), false)).not.toHaveProperty('thinking');
    // Thinking that came back signed keeps thinking on; so does a conversation not in a tool loop.
    const signed = toAnthropicRequest(request({ reasoning_effort: 'low', messages: loop([{ type: 'reasoning', text: 'hmm', signature: 'sig' }, call]) }), false);
    expect(signed.thinking).toMatchObject({ type: 'enabled' });
    expect(toAnthropicRequest(request({ reasoning_effort: 'low' }), false).thinking).toMatchObject({ type: 'enabled' });
    // Explicit thinking is forwarded as asked.
    expect(toAnthropicRequest(request({ thinking: { type: 'enabled', budget_tokens: 2048 }, messages: loop([call]) }), false).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  test("a longer loop keeps thinking on when the loop's first assistant message thought (Claude thinks only there)", () => {
    const second = { ...call, id: 'toolu_2' };
    const longer = (first: UnifiedRequest['messages'][number]['content']): UnifiedRequest['messages'] => [
      ...loop(first),
      { role: 'assistant', content: [second] },
      { role: 'user', content: [{ type: 'tool-result', tool_use_id: 'toolu_2', content: 'found again' }] },
    ];
    expect(toAnthropicRequest(request({ reasoning_effort: 'low', messages: longer([{ type: 'reasoning', text: 'hmm', signature: 'sig' }, call]) }), false).thinking).toMatchObject({ type: 'enabled' });
    expect(toAnthropicRequest(request({ reasoning_effort: 'low', messages: longer([call]) }), false)).not.toHaveProperty('thinking');
  });
});

describe('thinking from a reasoning effort, fitted to the rest of the request', () => {
  test('its budget is at most half of max_tokens (at least 1024), so the answer keeps room; none when max_tokens is 1024 or less', () => {
    expect(toAnthropicRequest(request({ reasoning_effort: 'high', max_tokens: 4000 }), false).thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    expect(toAnthropicRequest(request({ reasoning_effort: 'high', max_tokens: 1500 }), false).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(toAnthropicRequest(request({ reasoning_effort: 'high', max_tokens: 1000 }), false)).not.toHaveProperty('thinking');
    // Explicit thinking is forwarded as asked.
    expect(toAnthropicRequest(request({ thinking: { type: 'enabled', budget_tokens: 3999 }, max_tokens: 4000 }), false).thinking).toEqual({ type: 'enabled', budget_tokens: 3999 });
  });

  test('it gives way to what thinking refuses: a temperature other than 1, top_k, a forced tool choice', () => {
    const tools = [{ type: 'function' as const, name: 'lookup', description: 'd', input_schema: { type: 'object' } }];
    for (const extra of [{ temperature: 0.3 }, { top_k: 5 }, { tools, tool_choice: 'required' as const }, { tools, tool_choice: { type: 'function' as const, name: 'lookup' } }]) {
      const body = toAnthropicRequest(request({ reasoning_effort: 'low', ...extra } as Partial<UnifiedRequest>), false);
      expect(body).not.toHaveProperty('thinking');
    }
    expect(toAnthropicRequest(request({ reasoning_effort: 'low', temperature: 1 }), false).thinking).toMatchObject({ type: 'enabled' });
    expect(toAnthropicRequest(request({ reasoning_effort: 'low', tools, tool_choice: 'auto' }), false).thinking).toMatchObject({ type: 'enabled' });
  });
});
