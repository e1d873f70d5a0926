import type { ContentBlock, MessagesRequest } from '../../domain/messages';
import type { ModelRecord } from '../catalog';
import type { AssistantPart, CacheControl, ImageSource, TextPart, UnifiedRequest, UnifiedTool, UserPart } from '../types';

const KNOWN_FIELDS = new Set([
  'model', 'messages', 'max_tokens', 'system', 'tools', 'tool_choice', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'stream', 'thinking', 'metadata',
]);

const cache = (block: object): { cache_control?: CacheControl } =>
  (block as { cache_control?: unknown }).cache_control ? { cache_control: (block as { cache_control: CacheControl }).cache_control } : {};

function imageSource(source: { type: string; [key: string]: unknown }): ImageSource {
  return source.type === 'url' ? { kind: 'url', url: String(source.url) } : { kind: 'base64', media_type: String(source.media_type), data: String(source.data) };
}

const blocksOf = (content: string | ContentBlock[]): ContentBlock[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : content);

function userPart(block: ContentBlock): UserPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text), ...cache(block) };
    case 'image':
      return { type: 'image', source: imageSource(block.source as { type: string }), ...cache(block) };
    case 'tool_result': {
      const content = block.content as string | Array<{ type: string; text?: string; source?: { type: string } }> | undefined;
      return {
        type: 'tool-result',
        tool_use_id: String(block.tool_use_id),
        content:
          content === undefined
            ? ''
            : typeof content === 'string'
              ? content
              : content.map((p) =>
                  p.type === 'text'
                    ? { type: 'text' as const, text: String(p.text) }
                    : p.type === 'image'
                      ? { type: 'image' as const, source: imageSource(p.source!) }
                      : { type: 'provider-raw' as const, provider: 'anthropic' as const, block: p as Record<string, unknown> },
                ),
        ...(block.is_error ? { is_error: true } : {}),
        ...cache(block),
      };
    }
    default:
      return { type: 'provider-raw', provider: 'anthropic', block: block as Record<string, unknown> };
  }
}

function assistantPart(block: ContentBlock): AssistantPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text), ...cache(block) };
    case 'thinking':
      return { type: 'reasoning', text: String(block.thinking), signature: String(block.signature) };
    case 'redacted_thinking':
      return { type: 'redacted-reasoning', data: String(block.data) };
    case 'tool_use':
      return { type: 'tool-call', id: String(block.id), name: String(block.name), input: block.input as Record<string, unknown>, ...cache(block) };
    default:
      return { type: 'provider-raw', provider: 'anthropic', block: block as Record<string, unknown> };
  }
}

/** Anthropic messages request (validated) → hub request. Unknown top-level fields ride along in provider_options. */
export function messagesToUnified(request: MessagesRequest, model: ModelRecord, headers: Record<string, string> = {}): UnifiedRequest {
  const system: TextPart[] | undefined =
    request.system === undefined
      ? undefined
      : typeof request.system === 'string'
        ? [{ type: 'text', text: request.system }]
        : request.system.map((block) => ({ type: 'text', text: block.text, ...cache(block) }));
  const tools: UnifiedTool[] | undefined = request.tools?.map((tool) =>
    tool.name === 'web_search' && typeof tool.type === 'string' && tool.type.startsWith('web_search_')
      ? {
          type: 'web_search',
          allowed_domains: (tool.allowed_domains as string[] | null) ?? undefined,
          blocked_domains: (tool.blocked_domains as string[] | null) ?? undefined,
          max_uses: (tool.max_uses as number | null) ?? undefined,
        }
      : {
          type: 'function',
          name: String(tool.name),
          description: tool.description as string | undefined,
          input_schema: tool.input_schema as Record<string, unknown>,
          ...cache(tool),
        },
  );
  const choice = request.tool_choice;
  const extra = Object.fromEntries(Object.entries(request).filter(([key]) => !KNOWN_FIELDS.has(key)));
  return {
    model,
    system,
    messages: request.messages.map((message) =>
      message.role === 'user'
        ? { role: 'user', content: blocksOf(message.content).map(userPart) }
        : { role: 'assistant', content: blocksOf(message.content).map(assistantPart) },
    ),
    tools,
    tool_choice: choice === undefined ? undefined : choice.type === 'auto' ? 'auto' : choice.type === 'any' ? 'required' : choice.type === 'none' ? 'none' : { type: 'tool', name: choice.name },
    parallel_tool_calls: choice && 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use ? false : undefined,
    max_tokens: request.max_tokens,
    temperature: request.temperature,
    top_p: request.top_p,
    top_k: request.top_k,
    stop: request.stop_sequences,
    thinking: request.thinking,
    metadata: request.metadata,
    provider_options: Object.keys(extra).length > 0 ? extra : undefined,
    headers,
  };
}
