import { z } from 'zod';
import { CATALOG_MAX_OUTPUT_TOKENS } from '../providers/catalog';
import { ToolInputSchema } from './json-schema';

/**
 * POST /v1/messages request (Anthropic messages shape). Blocks are checked for what the
 * gateway reads; block kinds it does not model (documents, server tool results, ...)
 * and unknown top-level fields are forwarded to the provider unchanged.
 */
const CacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.string().optional() });

const ImageSource = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('base64'), media_type: z.string().min(1), data: z.string().min(1) }),
  z.looseObject({ type: z.literal('url'), url: z.string().min(1) }),
]);

export const TextBlock = z.looseObject({ type: z.literal('text'), text: z.string(), cache_control: CacheControl.nullish() });
export const ImageBlock = z.looseObject({ type: z.literal('image'), source: ImageSource, cache_control: CacheControl.nullish() });
export const ToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: CacheControl.nullish(),
});
export const ToolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  // Text and images, and Anthropic's other kinds (document, search_result) forwarded as sent.
  content: z.union([z.string(), z.array(z.union([TextBlock, ImageBlock, z.lazy(() => OtherBlock)]))]).optional(),
  is_error: z.boolean().optional(),
  cache_control: CacheControl.nullish(),
});
export const ThinkingBlock = z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
export const RedactedThinkingBlock = z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() });
const KNOWN = ['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'];
/** Any other block kind (document, server_tool_use, web_search_tool_result, ...): forwarded as is. */
export const OtherBlock = z.looseObject({ type: z.string().refine((type) => !KNOWN.includes(type)) });

export const ContentBlock = z.union([TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock, RedactedThinkingBlock, OtherBlock]);
export type ContentBlock = z.infer<typeof ContentBlock>;

export const MessagesMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(ContentBlock)]),
});

export const CustomTool = z.looseObject({
  type: z.literal('custom').optional(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names must match ^[a-zA-Z0-9_-]{1,64}$'),
  description: z.string().optional(),
  input_schema: ToolInputSchema,
  cache_control: CacheControl.nullish(),
});
export const WebSearchServerTool = z.looseObject({
  type: z.string().regex(/^web_search_\d+$/),
  name: z.literal('web_search'),
  allowed_domains: z.array(z.string()).nullish(),
  blocked_domains: z.array(z.string()).nullish(),
  max_uses: z.int().min(1).nullish(),
});

export const MessagesRequest = z.looseObject({
  model: z.string().min(1).max(255),
  messages: z.array(MessagesMessage).min(1),
  max_tokens: z.int().min(1).max(CATALOG_MAX_OUTPUT_TOKENS, `max_tokens must be at most ${CATALOG_MAX_OUTPUT_TOKENS}`),
  system: z.union([z.string(), z.array(TextBlock)]).optional(),
  // Anthropic's other versioned tools (bash_*, text_editor_*, code_execution_*, ...) are not
  // forwarded: the hub models only these two kinds, and server tools bill outside token usage.
  tools: z
    .array(
      z.union([WebSearchServerTool, CustomTool], {
        error: 'unsupported tool: the gateway takes custom tools ({name, description, input_schema}) and web_search_* server tools',
      }),
    )
    .max(128)
    .optional(),
  tool_choice: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
      z.strictObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
      z.strictObject({ type: z.literal('none') }),
      z.strictObject({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
    ])
    .optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.int().min(0).optional(),
  stream: z.boolean().optional(),
  thinking: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('enabled'), budget_tokens: z.int().min(1024, 'thinking.budget_tokens must be at least 1024') }),
      z.strictObject({ type: z.literal('disabled') }),
    ])
    .optional(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullish() }).optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;
