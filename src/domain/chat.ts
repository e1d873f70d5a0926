import { z } from 'zod';
import { CATALOG_MAX_OUTPUT_TOKENS } from '../providers/catalog';
import { JsonTextError, parseJsonText } from '../json-text';
import { BASE64_PAYLOAD_RULE, hasBase64Payload, isTextMediaType, optionalOrNull, parseDataUrl, unreadableTextFile } from './fields';
import { ToolInputSchema } from './json-schema';

/**
 * POST /v1/chat/completions request (OpenAI chat completions shape). Unknown fields are
 * refused with 400 rather than silently dropped.
 */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_STOP_SEQUENCES = 4;

const TextPart = z.strictObject({ type: z.literal('text'), text: z.string() });

const ImageUrlPart = z.strictObject({
  type: z.literal('image_url'),
  // What a provider can read: a link it fetches, or the image inline.
  image_url: z.strictObject({
    url: z
      .string()
      .refine((url) => /^https?:\/\/\S+/i.test(url) || parseDataUrl(url)?.mediaType.startsWith('image/'), 'must be an http(s) URL or a data:image/...;base64, URL')
      .refine(hasBase64Payload, BASE64_PAYLOAD_RULE),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
});
// OpenAI's document part. Only inline data: `file_id` names a file of OpenAI's Files API, which
// the gateway does not offer (and other providers could not read).
const FilePart = z.strictObject({
  type: z.literal('file'),
  file: z
    .strictObject({
      file_data: z
        .string()
        .refine((url) => parseDataUrl(url) !== undefined, 'file_data must be a data: URL with base64 content (data:application/pdf;base64,...)')
        .refine(hasBase64Payload, BASE64_PAYLOAD_RULE)
        .superRefine(refuseUnreadableTextFile)
        .optional(),
      file_id: z.string().optional(),
      filename: z.string().optional(),
    })
    .refine((file) => file.file_id === undefined, { message: 'file_id is not supported (the gateway has no Files API); send the file inline as file_data', path: ['file_id'] })
    .refine((file) => file.file_data !== undefined, { message: 'file_data is required', path: ['file_data'] }),
});
/** A text file (read as text for every provider) must be text in its charset. */
function refuseUnreadableTextFile(url: string, ctx: z.RefinementCtx): void {
  const file = parseDataUrl(url);
  const problem = file && unreadableTextFile(file.mediaType, file.data, file.charset);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
}

const UserContent = z.union([z.string(), z.array(z.discriminatedUnion('type', [TextPart, ImageUrlPart, FilePart])).min(1)]);
const TextContent = z.union([z.string(), z.array(TextPart)]);

// Fields of a returned assistant message that a request has no use for: OpenAI's
// `annotations`, and `parsed` / `parsed_arguments` that the openai SDK's helpers
// (stream().finalMessage(), parse()) add. Callers send such messages back on the next turn:
// taken and dropped (they repeat what content and arguments hold), never forwarded.
const returnedOnly = z.unknown().optional().transform(() => undefined);

export const ChatToolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().regex(TOOL_NAME_PATTERN), arguments: z.string(), parsed_arguments: returnedOnly }),
  // A Gemini call's thought signature, as the gateway (and Google's OpenAI-compatible API) returned it.
  extra_content: z.looseObject({ google: z.looseObject({ thought_signature: z.string().max(1_000_000).optional() }).optional() }).optional(),
});

// The openai SDK types these message fields `T | null` and sends back the nulls a returned
// message carries (`audio: null`, `function_call: null`): null reads as omitted, as OpenAI reads it.
const name = optionalOrNull(z.string());
/** Fields the gateway has no use for but OpenAI allows as null on an assistant message (audio output, the deprecated function_call). */
const nullOnly = (what: string) =>
  z
    .unknown()
    .optional()
    .refine((value) => value === null || value === undefined, `${what} is not supported; send null or omit it`)
    .transform(() => undefined);

export const ChatMessage = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('system'), content: TextContent, name }),
  z.strictObject({ role: z.literal('developer'), content: TextContent, name }),
  z.strictObject({ role: z.literal('user'), content: UserContent, name }),
  z.strictObject({
    role: z.literal('assistant'),
    content: TextContent.nullish(),
    tool_calls: optionalOrNull(z.array(ChatToolCall)),
    reasoning_content: z.string().nullish(),
    refusal: z.string().nullish(),
    name,
    audio: nullOnly('audio (assistant audio output)'),
    function_call: nullOnly('function_call (deprecated; use tool_calls)'),
    parsed: returnedOnly,
    annotations: returnedOnly,
  }),
  z.strictObject({ role: z.literal('tool'), content: TextContent, tool_call_id: z.string().min(1) }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const FunctionToolSchema = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().regex(TOOL_NAME_PATTERN, 'tool names must match ^[a-zA-Z0-9_-]{1,64}$'),
    description: z.string().optional(),
    parameters: ToolInputSchema.optional(),
    strict: z.boolean().nullish(),
  }),
});

/** Native server-side web search (models with the `web_search` capability). Omit `allowed_domains` to allow all. */
export const WebSearchToolSchema = z.strictObject({
  type: z.literal('web_search'),
  allowed_domains: z.array(z.string().min(1)).max(100).optional(),
  blocked_domains: z.array(z.string().min(1)).max(100).optional(),
  max_uses: z.int().min(1).optional(),
});

export const ChatTool = z.discriminatedUnion('type', [FunctionToolSchema, WebSearchToolSchema]);

/**
 * OpenAI's own way to ask a search model to search (what its SDK and docs use): the same as a
 * `web_search` tool, with its options.
 */
export const WebSearchOptionsSchema = z.strictObject({
  search_context_size: z.enum(['low', 'medium', 'high']).optional(),
  user_location: optionalOrNull(
    z.strictObject({
      type: z.literal('approximate'),
      approximate: z.strictObject({
        city: z.string().max(256).optional(),
        country: z.string().regex(/^[A-Z]{2}$/, 'country must be a two-letter ISO 3166-1 code').optional(),
        region: z.string().max(256).optional(),
        timezone: z.string().max(64).optional(),
      }),
    }),
  ),
});

export const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    json_schema: z.strictObject({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

export const ThinkingConfigSchema = z.strictObject({
  thinking_budget: z.int().min(-1).optional(),
  include_thoughts: z.boolean().optional(),
});

export const ChatCompletionRequest = z.strictObject({
  model: z.string().min(1).max(255),
  messages: z.array(ChatMessage).min(1),
  temperature: optionalOrNull(z.number()),
  top_p: optionalOrNull(z.number().min(0).max(1)),
  max_tokens: optionalOrNull(z.int().min(1).max(CATALOG_MAX_OUTPUT_TOKENS, `max_tokens must be at most ${CATALOG_MAX_OUTPUT_TOKENS}`)),
  /** OpenAI's newer name for max_tokens; accepted as an alias. */
  max_completion_tokens: optionalOrNull(z.int().min(1).max(CATALOG_MAX_OUTPUT_TOKENS, `max_completion_tokens must be at most ${CATALOG_MAX_OUTPUT_TOKENS}`)),
  stream: optionalOrNull(z.boolean()),
  // include_obfuscation (OpenAI pads chunks against length side channels) is accepted and has no
  // effect: the gateway writes its own chunks and adds no padding.
  stream_options: optionalOrNull(z.strictObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() })),
  stop: optionalOrNull(z.union([z.string(), z.array(z.string()).max(MAX_STOP_SEQUENCES)])),
  tools: optionalOrNull(z.array(ChatTool).max(128)),
  web_search_options: optionalOrNull(WebSearchOptionsSchema),
  tool_choice: optionalOrNull(
    z.union([z.enum(['auto', 'none', 'required']), z.strictObject({ type: z.literal('function'), function: z.strictObject({ name: z.string() }) })]),
  ),
  parallel_tool_calls: optionalOrNull(z.boolean()),
  response_format: optionalOrNull(ResponseFormatSchema),
  reasoning_effort: optionalOrNull(z.string().min(1)),
  provider_options: z.looseObject({ thinking_config: ThinkingConfigSchema.optional() }).optional(),
  user: optionalOrNull(z.string().max(256)),
  n: optionalOrNull(z.literal(1)),
});
export type ChatCompletionRequest = z.output<typeof ChatCompletionRequest>;

/**
 * `provider_options` carries provider knobs the gateway does not model. Keys the gateway sets
 * from the request's own fields, or that change which model answers, what it is sent or what
 * the call costs, are refused: through provider_options they would bypass validation,
 * moderation or billing. Compared in snake_case (Google accepts both spellings).
 */
const RESERVED_PROVIDER_OPTIONS: Record<'openai' | 'google', ReadonlySet<string>> = {
  openai: new Set([
    'model', 'messages', 'functions', 'function_call', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tokens',
    'max_completion_tokens', 'temperature', 'top_p', 'stop', 'n', 'stream', 'stream_options', 'response_format',
    'reasoning_effort', 'web_search_options', 'user', 'audio', 'modalities', 'service_tier',
  ]),
  google: new Set([
    'max_output_tokens', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'candidate_count', 'response_mime_type',
    'response_schema', 'response_json_schema', 'thinking_config', 'response_modalities', 'speech_config',
  ]),
};
const snakeCase = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** A request that parsed but does not fit the chosen model. */
export interface RuleViolation {
  message: string;
  param: string;
}

/**
 * The catalog-driven rules of a chat request (model records are data; these are the
 * checks): temperature support and range, response formats, reasoning effort enum,
 * per-model output ceiling, tool capabilities, provider options, tool-call pairing.
 */
export function checkChatRequest(request: ChatCompletionRequest, model: import('../providers/catalog').ModelRecord): RuleViolation | undefined {
  const temperature = model.parameters.temperature;
  if (request.temperature !== undefined) {
    if (!temperature?.supported) return { param: 'temperature', message: `temperature is not supported by ${model.id}` };
    if (request.temperature < temperature.min || request.temperature > temperature.max) {
      return { param: 'temperature', message: `temperature must be between ${temperature.min} and ${temperature.max} for ${model.id}` };
    }
  }
  const sampling = checkSampling(model, request);
  if (sampling) return sampling;
  if (request.response_format && !model.parameters.response_format_type.includes(request.response_format.type)) {
    return {
      param: 'response_format.type',
      message: `response_format type '${request.response_format.type}' is not supported by ${model.id}; accepted: ${model.parameters.response_format_type.join(', ')}`,
    };
  }
  if (request.reasoning_effort !== undefined) {
    const accepted = model.parameters.reasoning_effort ?? [];
    if (!accepted.includes(request.reasoning_effort)) {
      return {
        param: 'reasoning_effort',
        message: accepted.length ? `reasoning_effort must be one of ${accepted.join(', ')} for ${model.id}` : `${model.id} accepts no reasoning_effort`,
      };
    }
  }
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (request.max_tokens !== undefined && request.max_completion_tokens !== undefined) {
    return { param: 'max_tokens', message: 'set max_tokens or max_completion_tokens, not both' };
  }
  if (maxTokens !== undefined && maxTokens > model.max_output_tokens) {
    return { param: 'max_tokens', message: `max_tokens must be at most ${model.max_output_tokens} for ${model.id}` };
  }
  if (request.provider_options !== undefined) {
    if (model.provider === 'anthropic') return { param: 'provider_options', message: 'provider_options are supported only for openai/* and google/* models' };
    const reserved = RESERVED_PROVIDER_OPTIONS[model.provider === 'google' ? 'google' : 'openai'];
    for (const key of Object.keys(request.provider_options)) {
      // thinking_config is the one documented option (google/* only, checked below).
      if (key !== 'thinking_config' && reserved.has(snakeCase(key))) {
        return { param: `provider_options.${key}`, message: `provider_options.${key} is not allowed: the gateway sets it, or it changes the model, the content or the price of the call` };
      }
    }
    if (request.provider_options.thinking_config !== undefined) {
      if (model.provider !== 'google') return { param: 'provider_options.thinking_config', message: 'thinking_config is supported only for google/* models' };
      // The same knob as reasoning_effort: only a model that reasons takes it (Gemini 2.0 refuses it upstream).
      if (!model.capabilities.includes('reasoning')) return { param: 'provider_options.thinking_config', message: `${model.id} does not think (it lacks the 'reasoning' capability)` };
      if (request.reasoning_effort !== undefined) {
        return { param: 'provider_options.thinking_config', message: 'thinking_config and reasoning_effort are mutually exclusive on google/* models' };
      }
    }
  }
  if (!model.capabilities.includes('vision')) {
    for (const [index, message] of request.messages.entries()) {
      if (message.role !== 'user' || typeof message.content === 'string') continue;
      const part = message.content.findIndex((p) => p.type !== 'text');
      if (part >= 0) return { param: `messages.${index}.content.${part}`, message: `${model.id} does not accept images or files (it lacks the 'vision' capability)` };
    }
  }
  if (model.provider !== 'google') {
    // Anthropic and OpenAI read PDF files (and the gateway reads text files as text); Gemini takes any.
    for (const [index, message] of request.messages.entries()) {
      if (message.role !== 'user' || typeof message.content === 'string') continue;
      for (const [partIndex, part] of message.content.entries()) {
        if (part.type !== 'file') continue;
        const mediaType = parseDataUrl(part.file.file_data ?? '')?.mediaType ?? '';
        if (mediaType !== 'application/pdf' && !isTextMediaType(mediaType)) {
          return { param: `messages.${index}.content.${partIndex}`, message: `${model.id} reads PDF and text files only (got ${mediaType || 'no media type'})` };
        }
      }
    }
  }
  for (const [index, tool] of (request.tools ?? []).entries()) {
    if (tool.type === 'function' && !model.capabilities.includes('tools')) {
      return { param: `tools.${index}`, message: `${model.id} does not support tools` };
    }
    if (tool.type === 'web_search') {
      if (!model.capabilities.includes('web_search')) return { param: `tools.${index}`, message: `${model.id} does not support the web_search tool` };
      if ((tool.allowed_domains || tool.blocked_domains || tool.max_uses) && model.provider !== 'anthropic') {
        return { param: `tools.${index}`, message: `${model.provider} web search takes no domain lists or max_uses` };
      }
    }
  }
  const searchOptions = request.web_search_options;
  if (searchOptions !== undefined) {
    if (!model.capabilities.includes('web_search')) return { param: 'web_search_options', message: `${model.id} does not support web search` };
    if ((request.tools ?? []).some((tool) => tool.type === 'web_search')) return { param: 'web_search_options', message: 'ask for web search once: a web_search tool or web_search_options, not both' };
    if (searchOptions.search_context_size !== undefined && model.provider !== 'openai') {
      return { param: 'web_search_options.search_context_size', message: `${model.provider} web search takes no search_context_size` };
    }
    if (searchOptions.user_location !== undefined && model.provider === 'google') return { param: 'web_search_options.user_location', message: 'google web search takes no user_location' };
  }
  const names = (request.tools ?? []).flatMap((tool) => (tool.type === 'function' ? [tool.function.name] : []));
  if (new Set(names).size !== names.length) return { param: 'tools', message: 'tool names must be unique' };
  if (request.tool_choice !== undefined && request.tool_choice !== 'none' && (request.tools ?? []).length === 0) {
    return { param: 'tool_choice', message: 'tool_choice needs tools' };
  }
  // Forcing a call needs a function to call (web search is not one the caller gets back).
  if (request.tool_choice === 'required' && names.length === 0) return { param: 'tool_choice', message: "tool_choice 'required' needs at least one function tool" };
  if (typeof request.tool_choice === 'object' && !names.includes(request.tool_choice.function.name)) {
    return { param: 'tool_choice', message: `tool_choice names a tool that is not in tools: ${request.tool_choice.function.name}` };
  }
  return checkToolPairing(request.messages);
}

/**
 * Sampling fields a model refuses upstream (its catalog record says which): OpenAI's reasoning
 * models take no top_p or stop sequences, Claude's newest take a temperature or top_p, not both.
 * Shared by the chat and the messages endpoints.
 */
export function checkSampling(
  model: import('../providers/catalog').ModelRecord,
  request: { temperature?: number | null; top_p?: number | null; stop?: unknown },
): RuleViolation | undefined {
  const has = (value: unknown) => value !== undefined && value !== null;
  if (has(request.top_p) && model.parameters.top_p === false) return { param: 'top_p', message: `top_p is not supported by ${model.id}` };
  if (has(request.stop) && model.parameters.stop === false) return { param: 'stop', message: `stop sequences are not supported by ${model.id}` };
  if (model.parameters.temperature_or_top_p && has(request.temperature) && has(request.top_p)) {
    return { param: 'top_p', message: `${model.id} takes temperature or top_p, not both` };
  }
  return undefined;
}

function checkToolPairing(messages: ChatMessage[]): RuleViolation | undefined {
  const calls = new Set<string>();
  let conversation = false;
  for (const [index, message] of messages.entries()) {
    if (message.role === 'assistant') {
      for (const [callIndex, call] of (message.tool_calls ?? []).entries()) {
        calls.add(call.id);
        // Read by the body's rules (src/json-text.ts): providers that take arguments as objects
        // get them parsed, so `1e400` in them would reach those as null.
        let input: unknown;
        try {
          input = parseJsonText(call.function.arguments || '{}');
        } catch (error) {
          if (error instanceof JsonTextError && error.kind !== 'syntax') {
            return { param: `messages.${index}.tool_calls.${callIndex}.function.arguments`, message: `the arguments: ${error.message.replace('request body', 'arguments')}` };
          }
        }
        if (!input || typeof input !== 'object' || Array.isArray(input)) {
          return { param: `messages.${index}.tool_calls`, message: 'tool call arguments must be a JSON object encoded as a string' };
        }
      }
    }
    if (message.role === 'tool' && !calls.has(message.tool_call_id)) {
      return { param: `messages.${index}.tool_call_id`, message: 'a tool message must answer a tool call of an earlier assistant message' };
    }
    if (message.role === 'user' || message.role === 'assistant' || message.role === 'tool') conversation = true;
  }
  if (!conversation) return { param: 'messages', message: 'messages need at least one user message' };
  return undefined;
}
