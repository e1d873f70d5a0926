import type { ModelRecord } from './catalog';

/**
 * The hub shape every adapter translates to and from. Close to the Anthropic messages
 * shape (system apart, tool results inside user turns), because that is the richest of
 * the three: the others map onto it without loss for what the gateway supports.
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: string;
}

export type ImageSource = { kind: 'url'; url: string } | { kind: 'base64'; media_type: string; data: string };

export interface TextPart {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
  /** The model declined (OpenAI's `refusal`): the chat shape returns it as `message.refusal`, the others as text. */
  refusal?: true;
  /** Anthropic's citations of the text (web search results, documents), relayed on /v1/messages. */
  citations?: Array<Record<string, unknown>>;
}

/**
 * A web page a span of the answer's text cites (any provider's web search; the chat shape's
 * `annotations`). `start`/`end` are UTF-16 offsets (JavaScript string indices, as OpenAI's
 * `start_index`/`end_index`) into the answer's text: its text parts but refusals, joined.
 */
export interface UrlCitation {
  url: string;
  title?: string;
  start: number;
  end: number;
}
export interface ImagePart {
  type: 'image';
  source: ImageSource;
  cache_control?: CacheControl;
}
/** Assistant reasoning (Anthropic `thinking`, Google thought parts). `signature` must be sent back unchanged. */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  signature?: string;
}
export interface RedactedReasoningPart {
  type: 'redacted-reasoning';
  data: string;
}
export interface ToolCallPart {
  type: 'tool-call';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: CacheControl;
  /** Gemini's thought signature of the call: sent back unchanged with it (Gemini 3 requires it). */
  signature?: string;
}
export interface ToolResultPart {
  type: 'tool-result';
  tool_use_id: string;
  /** Provider-raw parts: blocks of the provider's own kinds (Anthropic documents, search results) forwarded as sent. */
  content: string | Array<TextPart | ImagePart | ProviderRawPart>;
  is_error?: boolean;
  cache_control?: CacheControl;
}
/**
 * A document in a user turn (the event log's document block): a file (`base64`, e.g. a PDF),
 * plain text, or a link. Providers that read files natively get the file; text is read as
 * text; a link is passed on as its address (the gateway does not fetch it).
 */
export interface DocumentPart {
  type: 'document';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'text'; data: string } | { type: 'url'; url: string };
  title?: string;
  context?: string;
}

/** A document as text: title, context, then the content (a file's content is not text: it is named instead). */
export function documentAsText(part: DocumentPart): string {
  const heading = [part.title, part.context].filter((line): line is string => Boolean(line));
  const body =
    part.source.type === 'text'
      ? part.source.data
      : part.source.type === 'url'
        ? `[document at ${part.source.url}]`
        : `[attached ${part.source.media_type} document${part.title ? ` "${part.title}"` : ''}: not readable as text]`;
  return [...heading, body].join('\n');
}

/** A provider block the hub does not model (e.g. Anthropic `server_tool_use`), kept verbatim for its own provider. */
export interface ProviderRawPart {
  type: 'provider-raw';
  provider: ModelRecord['provider'];
  block: Record<string, unknown>;
}

export type UserPart = TextPart | ImagePart | DocumentPart | ToolResultPart | ProviderRawPart;
export type AssistantPart = TextPart | ReasoningPart | RedactedReasoningPart | ToolCallPart | ProviderRawPart;

export type UnifiedMessage = { role: 'user'; content: UserPart[] } | { role: 'assistant'; content: AssistantPart[] };

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  strict?: boolean;
  cache_control?: CacheControl;
}
/** Server-side web search; only for models with the `web_search` capability. */
export interface WebSearchTool {
  type: 'web_search';
  allowed_domains?: string[];
  blocked_domains?: string[];
  max_uses?: number;
  /** OpenAI's search models only (how much of the pages goes into the answer). */
  search_context_size?: 'low' | 'medium' | 'high';
  /** Where the user is, for local results (OpenAI and Anthropic). */
  user_location?: { city?: string; country?: string; region?: string; timezone?: string };
}
export type UnifiedTool = FunctionTool | WebSearchTool;

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean } };

export interface UnifiedRequest {
  model: ModelRecord;
  system?: TextPart[];
  messages: UnifiedMessage[];
  tools?: UnifiedTool[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
  /** Output cap; when unset, OpenAI-compatible upstreams get none and Anthropic gets min(8192, model max). */
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop?: string[];
  reasoning_effort?: string;
  /** Explicit thinking (Anthropic `thinking`, Google `thinking_config`); wins over `reasoning_effort`. */
  thinking?: { type: 'enabled'; budget_tokens?: number; include_thoughts?: boolean } | { type: 'disabled' };
  response_format?: ResponseFormat;
  /** Provider-specific extra request fields, merged into the upstream body (OpenAI: as is; Google: into generationConfig). */
  provider_options?: Record<string, unknown>;
  /** Anthropic request metadata (`user_id`). */
  metadata?: Record<string, unknown>;
  /** Extra upstream headers, e.g. `anthropic-version` and `anthropic-beta` from the caller. */
  headers?: Record<string, string>;
}

export type UnifiedFinishReason = 'stop' | 'stop-sequence' | 'length' | 'tool-calls' | 'content-filter' | 'context-window' | 'other';

export interface FinishReason {
  unified: UnifiedFinishReason;
  /** The provider's own value, e.g. `end_turn`, `MAX_TOKENS`. */
  raw: string | null;
}

export interface Usage {
  /** Input tokens billed at the plain input price (cache reads and writes excluded). */
  input_tokens: number;
  /** All generated tokens, reasoning included. */
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Of `output_tokens`, those spent on reasoning (informational). */
  reasoning_tokens: number;
  /** Of `cache_creation_input_tokens`, those written to Anthropic's 1-hour cache (priced apart). */
  cache_creation_1h_input_tokens?: number;
  /** Web searches the provider billed for the call (priced per search). */
  web_search_requests?: number;
}

export const emptyUsage = (): Usage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
  reasoning_tokens: 0,
});

export type ResultPart = TextPart | ReasoningPart | RedactedReasoningPart | ToolCallPart | ProviderRawPart;

export interface UnifiedResult {
  /** Upstream response id. */
  id: string;
  /** The model name the upstream reported. */
  model: string;
  content: ResultPart[];
  finish_reason: FinishReason;
  /** The stop sequence that ended the output, when the provider says. */
  stop_sequence: string | null;
  usage: Usage;
  /** The web pages the answer's text cites, when it searched. */
  url_citations?: UrlCitation[];
}

/**
 * Stream parts, in order: one `stream-start`, then deltas, then exactly one `finish`
 * or `error` as the last part. Tool calls stream as `tool-input-start`,
 * `tool-input-delta`s, then one `tool-call` with the parsed input.
 */
export type StreamPart =
  // `usage`: what the upstream reports when the stream opens (Anthropic: the prompt's tokens), when it does.
  | { type: 'stream-start'; id: string; model: string; usage?: Usage }
  | { type: 'text-delta'; delta: string; refusal?: true }
  /** A citation for the text block being streamed (Anthropic `citations_delta`). */
  | { type: 'text-citation'; citation: Record<string, unknown> }
  /** Anthropic began a new text block (its blocks carry their own citations): /v1/messages keeps them apart. */
  | { type: 'text-block-start'; cited: boolean }
  /** A web page cited by a span of the answer's text (offsets into its text-deltas but refusals, joined). */
  | { type: 'url-citation'; citation: UrlCitation }
  | { type: 'reasoning-delta'; delta: string }
  | { type: 'reasoning-signature'; signature: string }
  | { type: 'redacted-reasoning'; data: string }
  | { type: 'tool-input-start'; id: string; name: string }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-call'; id: string; name: string; input: Record<string, unknown>; signature?: string }
  | { type: 'provider-raw'; provider: ModelRecord['provider']; block: Record<string, unknown> }
  | { type: 'finish'; finish_reason: FinishReason; stop_sequence: string | null; usage: Usage }
  /** The stream broke after it began; `usage` is what was produced until then (billable). */
  | { type: 'error'; error: Error; usage: Usage };

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ProviderAdapter {
  generate(request: UnifiedRequest, options?: CallOptions): Promise<UnifiedResult>;
  /** Resolves once the upstream accepted the request (so a refusal still has its HTTP status); then yields parts. */
  stream(request: UnifiedRequest, options?: CallOptions): Promise<AsyncIterable<StreamPart>>;
}
