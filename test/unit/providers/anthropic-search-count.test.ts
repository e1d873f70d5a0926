import { findModel } from '../../../src/providers/catalog';
import { parseAnthropicStream } from '../../../src/providers/anthropic/stream';
import type { StreamPart, Usage, UnifiedRequest } from '../../../src/providers/types';

/**
 * The web searches a streamed Anthropic answer is billed for: the closing count when it came;
 * when the stream breaks before it, the searches whose results the stream showed (a failed
 * search, one past max_uses, holds an error instead of results and is not billed).
 */
const request: UnifiedRequest = { model: findModel('anthropic/claude-haiku-4-5')!, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] };
const sse = (events: Array<Record<string, unknown>>) =>
  (async function* () {
    yield new TextEncoder().encode(events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
  })();
const searchBlocks = (index: number, ok: boolean) => [
  { type: 'content_block_start', index, content_block: { type: 'server_tool_use', id: `srv${index}`, name: 'web_search', input: {} } },
  { type: 'content_block_stop', index },
  {
    type: 'content_block_start',
    index: index + 1,
    content_block: { type: 'web_search_tool_result', tool_use_id: `srv${index}`, content: ok ? [{ type: 'web_search_result', url: 'https://example.com', title: 'x' }] : { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' } },
  },
  { type: 'content_block_stop', index: index + 1 },
];
const start = { type: 'message_start', message: { id: 'msg_1', model: 'claude-haiku-4-5', usage: { input_tokens: 10, output_tokens: 1 } } };
const lastUsage = async (parts: AsyncIterable<StreamPart>): Promise<Usage> => {
  let usage: Usage | undefined;
  for await (const part of parts) if (part.type === 'finish' || part.type === 'error') usage = part.usage;
  return usage!;
};

test('a whole stream is billed the closing count, whatever searches it showed', async () => {
  const events = [start, ...searchBlocks(0, true), ...searchBlocks(2, true), ...searchBlocks(4, false), { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5, server_tool_use: { web_search_requests: 2 } } }, { type: 'message_stop' }];
  expect((await lastUsage(parseAnthropicStream(sse(events), request))).web_search_requests).toBe(2);
});

test('a stream that breaks before the count is billed the searches whose results it showed, not the failed one', async () => {
  const events = [start, ...searchBlocks(0, true), ...searchBlocks(2, false), ...searchBlocks(4, true)];
  expect((await lastUsage(parseAnthropicStream(sse(events), request))).web_search_requests).toBe(2);
});
