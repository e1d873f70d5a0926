import { sseMessage } from '../sse';
import { toAnthropicStopReason } from '../finish-reason';
import { emptyUsage, type FinishReason, type ResultPart, type StreamPart, type UnifiedResult, type Usage } from '../types';

export const messagesUsage = (usage: Usage) => ({
  input_tokens: usage.input_tokens,
  cache_creation_input_tokens: usage.cache_creation_input_tokens,
  cache_read_input_tokens: usage.cache_read_input_tokens,
  output_tokens: usage.output_tokens,
  // As Anthropic reports them: the cache writes by lifetime (the 1-hour ones cost more) and the searches billed.
  ...(usage.cache_creation_input_tokens > 0
    ? { cache_creation: { ephemeral_5m_input_tokens: usage.cache_creation_input_tokens - (usage.cache_creation_1h_input_tokens ?? 0), ephemeral_1h_input_tokens: usage.cache_creation_1h_input_tokens ?? 0 } }
    : {}),
  ...(usage.web_search_requests ? { server_tool_use: { web_search_requests: usage.web_search_requests } } : {}),
});

/** Anthropic upstreams keep their own stop reason (pause_turn, refusal, ...); others are mapped. */
const stopReason = (reason: FinishReason, anthropicUpstream: boolean): string =>
  anthropicUpstream && reason.raw ? reason.raw : toAnthropicStopReason(reason);

const messageId = (id: string) => (id.startsWith('msg_') ? id : `msg_${id}`);

function block(part: ResultPart): Record<string, unknown> | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...(part.citations ? { citations: part.citations } : {}) };
    case 'reasoning':
      return { type: 'thinking', thinking: part.text, signature: part.signature ?? '' };
    case 'redacted-reasoning':
      return { type: 'redacted_thinking', data: part.data };
    case 'tool-call':
      return { type: 'tool_use', id: part.id, name: part.name, input: part.input };
    case 'provider-raw':
      return part.provider === 'anthropic' ? part.block : undefined;
  }
}

/** Hub result → Anthropic message object. */
export function unifiedToMessages(result: UnifiedResult, anthropicUpstream: boolean) {
  return {
    id: messageId(result.id),
    type: 'message' as const,
    role: 'assistant' as const,
    model: result.model,
    content: result.content.map(block).filter((b): b is Record<string, unknown> => b !== undefined),
    stop_reason: stopReason(result.finish_reason, anthropicUpstream),
    stop_sequence: result.stop_sequence,
    usage: messagesUsage(result.usage),
  };
}

/**
 * Hub stream parts → Anthropic SSE events (`message_start`, `content_block_*`,
 * `message_delta`, `message_stop`, `ping`), as framed text. Blocks open and close as the
 * kind of content changes.
 */
export function createMessagesEventWriter(anthropicUpstream: boolean) {
  let index = -1;
  let open: { kind: 'text' | 'thinking' | 'tool'; id?: string } | undefined;
  const event = (type: string, data: Record<string, unknown>) => sseMessage({ type, ...data }, type);
  const close = (): string[] => {
    if (!open) return [];
    open = undefined;
    return [event('content_block_stop', { index })];
  };
  const start = (kind: 'text' | 'thinking' | 'tool', contentBlock: Record<string, unknown>, id?: string): string[] => {
    const out = close();
    index += 1;
    open = { kind, id };
    out.push(event('content_block_start', { index, content_block: contentBlock }));
    return out;
  };
  const whole = (contentBlock: Record<string, unknown>): string[] => {
    const out = close();
    index += 1;
    out.push(event('content_block_start', { index, content_block: contentBlock }), event('content_block_stop', { index }));
    return out;
  };
  return (part: StreamPart): string[] => {
    switch (part.type) {
      case 'stream-start':
        return [
          event('message_start', {
            message: { id: messageId(part.id), type: 'message', role: 'assistant', model: part.model, content: [], stop_reason: null, stop_sequence: null, usage: messagesUsage(part.usage ?? emptyUsage()) },
          }),
          event('ping', {}),
        ];
      case 'text-delta': {
        const out = open?.kind === 'text' ? [] : start('text', { type: 'text', text: '' });
        out.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: part.delta } }));
        return out;
      }
      case 'text-block-start':
        // As the upstream framed it: a new block, opened with `citations: []` when it is a cited one.
        return start('text', { type: 'text', text: '', ...(part.cited ? { citations: [] } : {}) });
      case 'text-citation': {
        // Anthropic streams a cited block's citations before its text: the block opens with them.
        const out = open?.kind === 'text' ? [] : start('text', { type: 'text', text: '', citations: [] });
        out.push(event('content_block_delta', { index, delta: { type: 'citations_delta', citation: part.citation } }));
        return out;
      }
      case 'reasoning-delta': {
        const out = open?.kind === 'thinking' ? [] : start('thinking', { type: 'thinking', thinking: '' });
        out.push(event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: part.delta } }));
        return out;
      }
      case 'reasoning-signature':
        return open?.kind === 'thinking' ? [event('content_block_delta', { index, delta: { type: 'signature_delta', signature: part.signature } })] : [];
      case 'redacted-reasoning':
        return whole({ type: 'redacted_thinking', data: part.data });
      case 'tool-input-start':
        return start('tool', { type: 'tool_use', id: part.id, name: part.name, input: {} }, part.id);
      case 'tool-input-delta':
        return open?.kind === 'tool' && open.id === part.id ? [event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part.delta } })] : [];
      case 'tool-call':
        if (open?.kind === 'tool' && open.id === part.id) return close();
        return [
          ...start('tool', { type: 'tool_use', id: part.id, name: part.name, input: {} }, part.id),
          event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(part.input) } }),
          ...close(),
        ];
      case 'provider-raw':
        return part.provider === 'anthropic' ? whole(part.block) : [];
      case 'finish':
        return [
          ...close(),
          // Usage in full here (cumulative, as Anthropic's own message_delta): message_start carries
          // the prompt's counts only when the upstream reported them at the start.
          event('message_delta', { delta: { stop_reason: stopReason(part.finish_reason, anthropicUpstream), stop_sequence: part.stop_sequence }, usage: messagesUsage(part.usage) }),
          event('message_stop', {}),
        ];
      // Anthropic's own citations came as text-citation parts. Other providers' web pages have no
      // Messages form (a web_search_result_location needs Anthropic's encrypted index to go back).
      case 'url-citation':
      case 'error':
        return [];
    }
  };
}
