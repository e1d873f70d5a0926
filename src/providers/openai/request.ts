import { hasCapability } from '../catalog';
import { documentAsText, type DocumentPart, type ImagePart, type TextPart, type UnifiedMessage, type UnifiedRequest } from '../types';
import { objectSchema } from '../tool-input';

/** Unified → OpenAI chat completions request body (also what OpenAI-compatible servers accept). */
export function toOpenAIRequest(request: UnifiedRequest, stream: boolean): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  if (request.system && request.system.length > 0) {
    messages.push({ role: 'system', content: request.system.map((part) => part.text).join('\n\n') });
  }
  for (const message of request.messages) messages.push(...convertMessage(message));

  const body: Record<string, unknown> = { model: request.model.name, messages };
  const functions = (request.tools ?? []).filter((tool) => tool.type === 'function');
  if (functions.length > 0) {
    body.tools = functions.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: objectSchema(tool.input_schema),
        ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      },
    }));
  }
  // OpenAI's chat completions search is a request option of the search models, not a tool.
  const search = (request.tools ?? []).find((tool) => tool.type === 'web_search');
  if (search) {
    body.web_search_options = {
      ...(search.search_context_size !== undefined ? { search_context_size: search.search_context_size } : {}),
      ...(search.user_location ? { user_location: { type: 'approximate', approximate: search.user_location } } : {}),
    };
  }
  // OpenAI refuses both without `tools` (web search alone is an option, not a tool).
  if (request.tool_choice !== undefined && functions.length > 0) {
    body.tool_choice =
      typeof request.tool_choice === 'string' ? request.tool_choice : { type: 'function', function: { name: request.tool_choice.name } };
  }
  if (request.parallel_tool_calls !== undefined && functions.length > 0) body.parallel_tool_calls = request.parallel_tool_calls;
  if (request.max_tokens !== undefined) {
    // Reasoning models refuse `max_tokens`; older OpenAI-compatible servers only know it.
    body[hasCapability(request.model, 'reasoning') ? 'max_completion_tokens' : 'max_tokens'] = request.max_tokens;
  }
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.reasoning_effort !== undefined) body.reasoning_effort = request.reasoning_effort;
  if (request.response_format !== undefined) body.response_format = request.response_format;
  if (typeof request.metadata?.user_id === 'string') body.user = request.metadata.user_id;
  // Provider knobs the gateway does not model; never one of the fields set above (the route also refuses those).
  if (request.provider_options) for (const [key, value] of Object.entries(request.provider_options)) if (!(key in body)) body[key] = value;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

function contentPart(part: TextPart | ImagePart | DocumentPart): Record<string, unknown> {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'document') {
    // A file goes as a chat `file` part (PDF input); text and links are read as text.
    if (part.source.type !== 'base64') return { type: 'text', text: documentAsText(part) };
    return { type: 'file', file: { filename: part.title ?? 'document', file_data: `data:${part.source.media_type};base64,${part.source.data}` } };
  }
  const url = part.source.kind === 'url' ? part.source.url : `data:${part.source.media_type};base64,${part.source.data}`;
  return { type: 'image_url', image_url: { url } };
}

function simpleContent(parts: Array<TextPart | ImagePart | DocumentPart>): string | Record<string, unknown>[] {
  // Plain strings when there are no images or files: every OpenAI-compatible server understands those.
  if (parts.every((part) => part.type === 'text' || (part.type === 'document' && part.source.type !== 'base64'))) {
    return parts.map((part) => (part.type === 'text' ? part.text : documentAsText(part as DocumentPart))).join('\n\n');
  }
  return parts.map(contentPart);
}

function convertMessage(message: UnifiedMessage): Record<string, unknown>[] {
  if (message.role === 'user') {
    const out: Record<string, unknown>[] = [];
    const rest: Array<TextPart | ImagePart | DocumentPart> = [];
    // Tool results must directly follow the assistant turn that made the calls.
    for (const part of message.content) {
      if (part.type === 'tool-result') {
        const content = typeof part.content === 'string' ? part.content : part.content.map((p) => (p.type === 'text' ? p.text : p.type === 'image' ? '[image]' : '')).join('\n');
        out.push({ role: 'tool', tool_call_id: part.tool_use_id, content });
      } else if (part.type === 'text' || part.type === 'image' || part.type === 'document') rest.push(part);
    }
    if (rest.length > 0) out.push({ role: 'user', content: simpleContent(rest) });
    return out;
  }
  const text = message.content.filter((part): part is TextPart => part.type === 'text' && !part.refusal).map((part) => part.text).join('');
  const refusal = message.content.filter((part): part is TextPart => part.type === 'text' && part.refusal === true).map((part) => part.text).join('');
  const calls = message.content.flatMap((part) =>
    part.type === 'tool-call' ? [{ id: part.id, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) } }] : [],
  );
  const out: Record<string, unknown> = { role: 'assistant', content: text.length > 0 ? text : null };
  if (refusal) out.refusal = refusal;
  if (calls.length > 0) out.tool_calls = calls;
  return [out];
}
