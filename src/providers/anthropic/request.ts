import { ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_MIN_THINKING_BUDGET, THINKING_BUDGETS } from '../reasoning';
import { documentAsText, type AssistantPart, type DocumentPart, type UnifiedRequest, type UnifiedTool, type UserPart } from '../types';
import { objectSchema } from '../tool-input';

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/**
 * The `max_tokens` Anthropic gets (it requires one): the request's, else the default room for
 * the answer, plus the thinking budget when thinking is on (the budget counts against it).
 */
export function anthropicMaxTokens(request: UnifiedRequest): number {
  if (request.max_tokens !== undefined) return request.max_tokens;
  const thinking = thinkingFor(request);
  const answer = ANTHROPIC_DEFAULT_MAX_TOKENS + (thinking?.type === 'enabled' ? thinking.budget_tokens : 0);
  return Math.min(request.model.max_output_tokens, answer);
}

/** Unified → Anthropic messages request body. */
export function toAnthropicRequest(request: UnifiedRequest, stream: boolean): Record<string, unknown> {
  const messages = mergeRoles(request.messages.map((message) => ({
    role: message.role,
    content: message.role === 'user' ? message.content.flatMap(userBlock) : message.content.flatMap(assistantBlock),
  })));
  // With thinking on, Anthropic requires the assistant turn of a tool loop in progress to start
  // with its signed thinking block. A client of the chat shape has no way to send it back, so
  // thinking asked for by a reasoning effort is left off for such a request (explicit thinking
  // is forwarded as asked).
  // Thinking also refuses a temperature other than 1, top_p below 0.95, top_k, and a forced
  // tool choice: an effort gives way to those (they were asked for explicitly).
  const choice = toolChoice(request);
  const effortGivesWay =
    request.thinking?.type !== 'enabled' &&
    (toolLoopWithoutThinking(messages) ||
      (request.temperature !== undefined && request.temperature !== 1) ||
      (request.top_p !== undefined && request.top_p < 0.95) ||
      request.top_k !== undefined ||
      choice?.type === 'any' ||
      choice?.type === 'tool');
  const thinking = effortGivesWay ? undefined : thinkingFor(request);
  const body: Record<string, unknown> = {
    model: request.model.name,
    max_tokens: anthropicMaxTokens(request),
    messages,
  };
  if (request.system && request.system.length > 0) {
    body.system = request.system.map((part) => ({ type: 'text', text: part.text, ...(part.cache_control ? { cache_control: part.cache_control } : {}) }));
  }
  if (request.tools && request.tools.length > 0) body.tools = request.tools.map(toolBlock);
  if (choice) body.tool_choice = choice;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.top_k !== undefined) body.top_k = request.top_k;
  if (request.stop !== undefined) body.stop_sequences = request.stop;
  if (thinking) body.thinking = thinking;
  if (request.metadata) body.metadata = request.metadata;
  // Fields the hub does not model (from POST /v1/messages), forwarded as the caller sent them.
  if (request.provider_options) for (const [key, value] of Object.entries(request.provider_options)) if (!(key in body)) body[key] = value;
  if (stream) body.stream = true;
  return body;
}

/**
 * The conversation ends inside a tool loop (tool results last) whose assistant turn did not start
 * with a thinking block. The loop's turn is every assistant message since the last user message
 * that is more than tool results: without interleaved thinking, Claude thinks only in the first.
 */
function toolLoopWithoutThinking(messages: Array<{ role: string; content: Array<Record<string, unknown>> }>): boolean {
  const last = messages.at(-1);
  if (!last || last.role !== 'user' || !last.content.some((block) => block.type === 'tool_result')) return false;
  let start = messages.length - 1;
  while (start > 0 && !(messages[start]!.role === 'user' && messages[start]!.content.some((block) => block.type !== 'tool_result'))) start--;
  const first = messages.slice(start).find((message) => message.role === 'assistant');
  return !first?.content.some((block) => block.type === 'thinking' || block.type === 'redacted_thinking');
}

function thinkingFor(request: UnifiedRequest): { type: 'enabled'; budget_tokens: number } | { type: 'disabled' } | undefined {
  if (request.thinking?.type === 'disabled') return { type: 'disabled' };
  let budget: number | undefined;
  if (request.thinking?.type === 'enabled') budget = request.thinking.budget_tokens ?? THINKING_BUDGETS.medium;
  else if (request.reasoning_effort !== undefined) budget = THINKING_BUDGETS[request.reasoning_effort];
  if (budget === undefined || budget === 0) return undefined;
  budget = Math.max(ANTHROPIC_MIN_THINKING_BUDGET, budget);
  // Explicit thinking is forwarded as asked (the provider reports a problem); an effort is fitted
  // in: at most half of max_tokens (at least Anthropic's minimum), so the answer keeps room.
  if (request.max_tokens !== undefined && request.thinking?.type !== 'enabled') {
    if (request.max_tokens <= ANTHROPIC_MIN_THINKING_BUDGET) return undefined;
    budget = Math.min(budget, Math.max(ANTHROPIC_MIN_THINKING_BUDGET, Math.floor(request.max_tokens / 2)));
  }
  return { type: 'enabled', budget_tokens: budget };
}

const withCache = <T extends Record<string, unknown>>(block: T, part: { cache_control?: unknown }): T =>
  part.cache_control ? { ...block, cache_control: part.cache_control } : block;

function imageSource(source: Extract<UserPart, { type: 'image' }>['source']) {
  return source.kind === 'url' ? { type: 'url', url: source.url } : { type: 'base64', media_type: source.media_type, data: source.data };
}

function userBlock(part: UserPart): Record<string, unknown>[] {
  switch (part.type) {
    case 'text':
      return [withCache({ type: 'text', text: part.text }, part)];
    case 'image':
      return [withCache({ type: 'image', source: imageSource(part.source) }, part)];
    case 'tool-result':
      return [
        withCache(
          {
            type: 'tool_result',
            tool_use_id: part.tool_use_id,
            content:
              typeof part.content === 'string'
                ? part.content
                : part.content.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : p.type === 'image' ? { type: 'image', source: imageSource(p.source) } : p.block)),
            ...(part.is_error ? { is_error: true } : {}),
          },
          part,
        ),
      ];
    case 'document':
      return [documentBlock(part)];
    case 'provider-raw':
      return part.provider === 'anthropic' ? [part.block] : [];
  }
}

/**
 * Anthropic reads PDFs and plain text as document blocks. A link goes as text: Anthropic would
 * fetch it itself, and refuses anything but a PDF there.
 */
function documentBlock(part: DocumentPart): Record<string, unknown> {
  if (part.source.type === 'url') return { type: 'text', text: documentAsText(part) };
  const source = part.source.type === 'text' ? { type: 'text', media_type: 'text/plain', data: part.source.data } : { type: 'base64', media_type: part.source.media_type, data: part.source.data };
  return { type: 'document', source, ...(part.title ? { title: part.title } : {}), ...(part.context ? { context: part.context } : {}) };
}

function assistantBlock(part: AssistantPart): Record<string, unknown>[] {
  switch (part.type) {
    case 'text':
      return part.text === '' ? [] : [withCache({ type: 'text', text: part.text }, part)];
    case 'reasoning':
      // Thinking is only accepted back with the signature Anthropic gave it.
      return part.signature ? [{ type: 'thinking', thinking: part.text, signature: part.signature }] : [];
    case 'redacted-reasoning':
      return [{ type: 'redacted_thinking', data: part.data }];
    case 'tool-call':
      return [withCache({ type: 'tool_use', id: part.id, name: part.name, input: part.input }, part)];
    case 'provider-raw':
      return part.provider === 'anthropic' ? [part.block] : [];
  }
}

function toolBlock(tool: UnifiedTool): Record<string, unknown> {
  if (tool.type === 'web_search') {
    return {
      type: 'web_search_20250305',
      name: 'web_search',
      ...(tool.allowed_domains ? { allowed_domains: tool.allowed_domains } : {}),
      ...(tool.blocked_domains ? { blocked_domains: tool.blocked_domains } : {}),
      ...(tool.max_uses !== undefined ? { max_uses: tool.max_uses } : {}),
      ...(tool.user_location ? { user_location: { type: 'approximate', ...tool.user_location } } : {}),
    };
  }
  return withCache({ name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), input_schema: objectSchema(tool.input_schema) }, tool);
}

function toolChoice(request: UnifiedRequest): Record<string, unknown> | undefined {
  const disableParallel = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  const choice = request.tool_choice;
  if (choice === undefined) return request.parallel_tool_calls === false && request.tools?.length ? { type: 'auto', ...disableParallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...disableParallel };
  if (choice === 'required') return { type: 'any', ...disableParallel };
  return { type: 'tool', name: choice.name, ...disableParallel };
}

/** Anthropic wants alternating roles: consecutive turns of one role are joined. */
function mergeRoles(messages: Array<{ role: string; content: Record<string, unknown>[] }>) {
  const out: Array<{ role: string; content: Record<string, unknown>[] }> = [];
  for (const message of messages) {
    const last = out[out.length - 1];
    if (last && last.role === message.role) last.content.push(...message.content);
    else out.push({ role: message.role, content: [...message.content] });
  }
  return out;
}
