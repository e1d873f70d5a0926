import { sseMessage } from '../sse';
import { asArray, asRecord, halves, type SimProtocol } from './protocol';
import { searchResults, SimError, wordDeltas, type Plan } from './script';

// Anthropic's error types, written out here rather than imported from the adapter
// (src/providers/anthropic/error-types.ts): the simulator stands in for the provider, so a
// mistake in the adapter's table must not be mirrored by the stand-in the tests run against.
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

function blocks(content: unknown): Record<string, unknown>[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : asArray(content).map(asRecord);
}

function resultText(content: unknown): string {
  return blocks(content)
    .filter((block) => block.type === 'text')
    .map((block) => String(block.text ?? ''))
    .join('\n');
}

// The stream's message_start reports no searches yet: its message_delta carries the count, as Anthropic's does.
const usage = (plan: Plan, output = plan.usage.output, searches = plan.webSearches) => ({
  input_tokens: plan.usage.input,
  cache_creation_input_tokens: plan.usage.cacheWrite,
  cache_read_input_tokens: plan.usage.cacheRead,
  output_tokens: output,
  cache_creation: { ephemeral_5m_input_tokens: plan.usage.cacheWrite - plan.usage.cacheWrite1h, ephemeral_1h_input_tokens: plan.usage.cacheWrite1h },
  ...(searches > 0 ? { server_tool_use: { web_search_requests: searches } } : {}),
});

const SEARCH_LEAD_IN = 'From the search results: ';

/** A searched answer cites one result per search, as Anthropic's web search does. */
const citations = (plan: Plan) =>
  searchResults(plan).map(({ url, title }, i) => ({
    type: 'web_search_result_location',
    url,
    title,
    cited_text: plan.words.slice(0, 3).join(' '),
    encrypted_index: `sim-${plan.id}-${i + 1}`,
  }));

/**
 * The blocks of each search, as Anthropic streams and returns them between the lead-in and the
 * cited text: the model's `server_tool_use` call of `web_search`, then its `web_search_tool_result`.
 */
const searchBlocks = (plan: Plan) =>
  searchResults(plan).flatMap(({ url, title }, i) => {
    const id = `srvtoolu_${plan.id}_${i + 1}`;
    return [
      { type: 'server_tool_use', id, name: 'web_search', input: { query: `${plan.words.slice(0, 3).join(' ')} ${i + 1}` } },
      { type: 'web_search_tool_result', tool_use_id: id, content: [{ type: 'web_search_result', url, title, encrypted_content: `sim-${plan.id}-${i + 1}`, page_age: null }] },
    ];
  });

const stopReason = (plan: Plan) =>
  ({ stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', stop_sequence: 'stop_sequence', context_window: 'model_context_window_exceeded' })[plan.finish];
const signature = (plan: Plan) => `sim-sig-${plan.id}`;

export const anthropicProtocol: SimProtocol = {
  parse(body, rawBody) {
    if (typeof body.model !== 'string') throw new SimError(400, 'model: Field required');
    if (typeof body.max_tokens !== 'number' || body.max_tokens < 1) throw new SimError(400, 'max_tokens: Field required');
    const messages = asArray(body.messages).map(asRecord);
    if (messages.length === 0) throw new SimError(400, 'messages: at least one message is required');
    if (messages[0]!.role !== 'user') throw new SimError(400, 'messages: first message must use the "user" role');
    let inputChars = blocks(body.system).reduce((sum, block) => sum + String(block.text ?? '').length, 0);
    const toolUseIds = new Set<string>();
    for (const [index, message] of messages.entries()) {
      if (index > 0 && messages[index - 1]!.role === message.role) throw new SimError(400, 'messages: roles must alternate between "user" and "assistant"');
      for (const block of blocks(message.content)) {
        if (block.type === 'text') inputChars += String(block.text ?? '').length;
        if (block.type === 'tool_use') {
          toolUseIds.add(String(block.id));
          inputChars += JSON.stringify(block.input ?? {}).length;
        }
        if (block.type === 'thinking' && typeof block.signature !== 'string') throw new SimError(400, 'thinking blocks must carry their signature');
        if (block.type === 'tool_result') {
          if (!toolUseIds.has(String(block.tool_use_id))) throw new SimError(400, 'unexpected `tool_use_id` found in `tool_result` blocks');
          inputChars += resultText(block.content).length;
        }
      }
    }
    const tools = asArray(body.tools).map(asRecord);
    inputChars += tools.length > 0 ? JSON.stringify(tools).length : 0;
    const last = messages[messages.length - 1]!;
    const lastBlocks = last.role === 'user' ? blocks(last.content) : [];
    let toolRounds = 0;
    let promptText = '';
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i]!;
      const content = blocks(message.content);
      if (message.role === 'assistant' && content.some((b) => b.type === 'tool_use')) toolRounds++;
      const text = message.role === 'user' ? content.filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('\n') : '';
      if (text) {
        promptText = text;
        break;
      }
    }
    return {
      provider: 'anthropic',
      model: body.model,
      lastUserText: lastBlocks.filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('\n'),
      toolResults: lastBlocks.filter((b) => b.type === 'tool_result').map((b) => resultText(b.content)),
      promptText,
      toolRounds,
      toolsOffered: tools.map((tool) => String(tool.name)),
      webSearchOffered: tools.some((tool) => typeof tool.type === 'string' && tool.type.startsWith('web_search_')),
      webSearchMaxUses: tools.map((tool) => tool.max_uses).find((uses): uses is number => typeof uses === 'number'),
      inputChars,
      maxTokens: body.max_tokens,
      rawBody,
      stream: body.stream === true,
      options: {},
    };
  },

  render(plan) {
    const content: Record<string, unknown>[] = [];
    if (plan.reasoning.length > 0) content.push({ type: 'thinking', thinking: plan.reasoning.join(' '), signature: signature(plan) });
    // A searched answer comes as Anthropic frames one: an uncited lead-in block, then the cited text.
    if (plan.words.length > 0 && plan.webSearches > 0) {
      content.push({ type: 'text', text: SEARCH_LEAD_IN }, ...searchBlocks(plan), { type: 'text', text: plan.words.join(' '), citations: citations(plan) });
    }
    else if (plan.words.length > 0) content.push({ type: 'text', text: plan.words.join(' ') });
    for (const call of plan.toolCalls) content.push({ type: 'tool_use', id: call.id.replace(/^call_/, 'toolu_'), name: call.name, input: call.input });
    return {
      id: `msg_${plan.id}`,
      type: 'message',
      role: 'assistant',
      model: plan.model.name,
      content,
      stop_reason: stopReason(plan),
      stop_sequence: plan.stopSequence ?? null,
      usage: usage(plan),
    };
  },

  streamEvents(plan) {
    const ev = (type: string, data: Record<string, unknown>) => sseMessage({ type, ...data }, type);
    const events = [
      ev('message_start', {
        message: { id: `msg_${plan.id}`, type: 'message', role: 'assistant', model: plan.model.name, content: [], stop_reason: null, stop_sequence: null, usage: usage(plan, 1, 0) },
      }),
      ev('ping', {}),
    ];
    let index = 0;
    if (plan.reasoning.length > 0) {
      events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } }));
      for (const delta of wordDeltas(plan.reasoning)) events.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: delta } }));
      events.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: signature(plan) } }));
      events.push(ev('content_block_stop', { index }));
      index++;
    }
    if (plan.words.length > 0 && plan.webSearches > 0) {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: SEARCH_LEAD_IN } }));
      events.push(ev('content_block_stop', { index }));
      index++;
      for (const block of searchBlocks(plan)) {
        if (block.type === 'server_tool_use') {
          events.push(ev('content_block_start', { index, content_block: { ...block, input: {} } }));
          events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } }));
        } else {
          events.push(ev('content_block_start', { index, content_block: block }));
        }
        events.push(ev('content_block_stop', { index }));
        index++;
      }
    }
    if (plan.words.length > 0) {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '', ...(plan.webSearches > 0 ? { citations: [] } : {}) } }));
      for (const citation of citations(plan)) events.push(ev('content_block_delta', { index, delta: { type: 'citations_delta', citation } }));
      for (const delta of wordDeltas(plan.words)) events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: delta } }));
      events.push(ev('content_block_stop', { index }));
      index++;
    }
    for (const call of plan.toolCalls) {
      events.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: call.id.replace(/^call_/, 'toolu_'), name: call.name, input: {} } }));
      for (const piece of halves(JSON.stringify(call.input))) events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }));
      events.push(ev('content_block_stop', { index }));
      index++;
    }
    events.push(ev('message_delta', { delta: { stop_reason: stopReason(plan), stop_sequence: plan.stopSequence ?? null }, usage: { output_tokens: plan.usage.output, ...(plan.webSearches > 0 ? { server_tool_use: { web_search_requests: plan.webSearches } } : {}) } }));
    events.push(ev('message_stop', {}));
    return events;
  },

  streamError(error) {
    return sseMessage(this.error(error).body, 'error');
  },
  error(error) {
    const type = ERROR_TYPES[error.status] ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error');
    return {
      status: error.status,
      body: { type: 'error', error: { type, message: error.message } },
      headers: { 'request-id': `req_sim_${error.status}`, ...(error.status === 429 ? { 'retry-after': '1' } : {}) },
    };
  },
};
