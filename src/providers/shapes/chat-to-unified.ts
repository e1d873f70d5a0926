import { isTextMediaType, parseDataUrl, readTextFile } from '../../domain/fields';
import type { ChatCompletionRequest, ChatMessage } from '../../domain/chat';
import type { ModelRecord } from '../catalog';
import { parseToolInput } from '../tool-input';
import type { AssistantPart, DocumentPart, ImageSource, TextPart, UnifiedMessage, UnifiedRequest, UserPart } from '../types';

const textOf = (content: string | Array<{ text: string }> | null | undefined): string =>
  content == null ? '' : typeof content === 'string' ? content : content.map((part) => part.text).join('');

export function imageSourceFromUrl(url: string): ImageSource {
  const data = parseDataUrl(url);
  return data ? { kind: 'base64', media_type: data.mediaType, data: data.data } : { kind: 'url', url };
}

/** An OpenAI `file` part (validated: inline base64 data) → a document the adapters hand on natively. */
function documentFromFile(file: { file_data?: string; filename?: string }): DocumentPart {
  const data = parseDataUrl(file.file_data ?? '');
  const title = file.filename ? { title: file.filename } : {};
  // A text file is read as text (as the agent runtime reads one): every provider takes that,
  // where a base64 file of a text type is refused by Anthropic and OpenAI.
  // (Validated: the bytes are text in the file's charset.)
  const read = data && isTextMediaType(data.mediaType) ? readTextFile(data.data, data.charset) : undefined;
  if (read && 'text' in read) return { type: 'document', source: { type: 'text', data: read.text }, ...title };
  return { type: 'document', source: { type: 'base64', media_type: data?.mediaType ?? 'application/octet-stream', data: data?.data ?? '' }, ...title };
}

/** OpenAI chat request (validated) → hub request. System messages anywhere become the system prompt. */
export function chatToUnified(request: ChatCompletionRequest, model: ModelRecord): UnifiedRequest {
  const system: TextPart[] = [];
  const messages: UnifiedMessage[] = [];
  const push = (message: UnifiedMessage) => {
    const last = messages[messages.length - 1];
    if (last && last.role === message.role) (last.content as unknown[]).push(...message.content);
    else messages.push(message);
  };
  for (const message of request.messages) {
    const converted = convert(message);
    if (converted === 'system') system.push({ type: 'text', text: textOf(message.content as string) });
    else if (converted.content.length > 0) push(converted);
  }
  const search = request.web_search_options;
  const searchTool = search && {
    type: 'web_search' as const,
    ...(search.search_context_size !== undefined ? { search_context_size: search.search_context_size } : {}),
    ...(search.user_location ? { user_location: search.user_location.approximate } : {}),
  };
  const listed = request.tools?.map((tool) =>
    tool.type === 'function'
      ? {
          type: 'function' as const,
          name: tool.function.name,
          description: tool.function.description,
          input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
          ...(tool.function.strict != null ? { strict: tool.function.strict } : {}),
        }
      : { type: 'web_search' as const, allowed_domains: tool.allowed_domains, blocked_domains: tool.blocked_domains, max_uses: tool.max_uses },
  );
  const tools = searchTool ? [...(listed ?? []), searchTool] : listed;
  const { thinking_config, ...otherOptions } = request.provider_options ?? {};
  const stop = request.stop == null ? undefined : typeof request.stop === 'string' ? [request.stop] : request.stop;
  return {
    model,
    system: system.length > 0 ? system : undefined,
    messages,
    tools,
    tool_choice:
      request.tool_choice === undefined ? undefined : typeof request.tool_choice === 'string' ? request.tool_choice : { type: 'tool', name: request.tool_choice.function.name },
    parallel_tool_calls: request.parallel_tool_calls,
    max_tokens: request.max_completion_tokens ?? request.max_tokens,
    temperature: request.temperature,
    top_p: request.top_p,
    stop,
    reasoning_effort: request.reasoning_effort,
    response_format: request.response_format?.type === 'text' ? undefined : (request.response_format as UnifiedRequest['response_format']),
    provider_options: request.provider_options ? { ...otherOptions, ...(thinking_config ? { thinking_config } : {}) } : undefined,
    metadata: request.user ? { user_id: request.user } : undefined,
  };
}

function convert(message: ChatMessage): UnifiedMessage | 'system' {
  switch (message.role) {
    case 'system':
    case 'developer':
      return 'system';
    case 'user': {
      const content: UserPart[] =
        typeof message.content === 'string'
          ? [{ type: 'text', text: message.content }]
          : message.content.map((part): UserPart => {
              if (part.type === 'text') return { type: 'text', text: part.text };
              if (part.type === 'image_url') return { type: 'image', source: imageSourceFromUrl(part.image_url.url) };
              return documentFromFile(part.file);
            });
      return { role: 'user', content };
    }
    case 'assistant': {
      const content: AssistantPart[] = [];
      const text = textOf(message.content);
      if (text) content.push({ type: 'text', text });
      // A refusal the gateway returned, sent back with the conversation: it stays part of it.
      if (message.refusal) content.push({ type: 'text', text: message.refusal, refusal: true });
      for (const call of message.tool_calls ?? []) {
        const signature = call.extra_content?.google?.thought_signature;
        content.push({ type: 'tool-call', id: call.id, name: call.function.name, input: parseToolInput(call.function.arguments), ...(signature ? { signature } : {}) });
      }
      return { role: 'assistant', content };
    }
    case 'tool':
      return { role: 'user', content: [{ type: 'tool-result', tool_use_id: message.tool_call_id, content: textOf(message.content) }] };
  }
}
