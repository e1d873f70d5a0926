/**
 * The model catalog: data, not code branches. Every model the gateway serves, with its
 * capabilities, parameter ranges, output ceiling, context window and prices.
 *
 * Prices are the providers' published list prices (USD per million tokens, standard
 * tier, prompts up to 200k tokens), stored as integer nano-credits per token.
 *
 * Credit rate: 1 credit = 0.01 USD (one US cent), so 1 nano-credit = 1e-11 USD and
 * a price of P USD per million tokens is P * 100,000 nano-credits per token. At this
 * rate every published price (down to 0.005 USD/M) is a whole number of nano-credits,
 * so credits are computed with integer arithmetic only.
 */
export type ProviderName = 'openai' | 'anthropic' | 'google';

export type Capability = 'tools' | 'web_search' | 'vision' | 'reasoning' | 'prompt_caching' | 'json_output';

export interface ModelRecord {
  /** `<provider>/<name>`, e.g. `openai/gpt-4o`. */
  id: string;
  provider: ProviderName;
  /** The provider's own model name, sent upstream. */
  name: string;
  /** The day the provider released the model (YYYY-MM-DD); `created` in GET /v1/models. */
  released: string;
  /**
   * Dated snapshot names the provider also answers to (Anthropic's `claude-sonnet-4-20250514`
   * behind `claude-sonnet-4-0`): accepted as this model and sent upstream as named.
   */
  snapshots?: string[];
  /** On a snapshot's record (found by findModel): the name of the model it is a snapshot of. */
  snapshotOf?: string;
  capabilities: Capability[];
  parameters: {
    /** Absent or `supported: false`: any temperature is refused with 400. */
    temperature?: { supported: boolean; min: number; max: number };
    /** Accepted `reasoning_effort` values; absent: the model accepts none. */
    reasoning_effort?: string[];
    response_format_type: string[];
    /** `false`: `top_p` is refused with 400 (OpenAI's reasoning and search models refuse it upstream). */
    top_p?: boolean;
    /** `false`: stop sequences are refused with 400 (OpenAI's reasoning models refuse them upstream). */
    stop?: boolean;
    /** `true`: `temperature` and `top_p` may not both be set (Claude Opus 4.1 and the 4.5 models). */
    temperature_or_top_p?: boolean;
  };
  max_output_tokens: number;
  context_window: number;
  pricing: ModelPricing;
}

/** Nano-credits per token (integers). */
export interface TokenPrices {
  input: number;
  output: number;
  cache_read: number;
  /** Cache writes (Anthropic's 5-minute cache; the others bill writes as input). */
  cache_write: number;
  /** Anthropic's 1-hour cache writes (2x input); absent: `cache_write`. */
  cache_write_1h?: number;
}

export interface ModelPricing extends TokenPrices {
  /**
   * The tier a call is billed at when its prompt (input, cache reads and cache writes)
   * exceeds `above_tokens`: Gemini 2.5 Pro prices long prompts higher, every token class of
   * that call included.
   */
  long_context?: TokenPrices & { above_tokens: number };
  /**
   * Nano-credits per web search the provider billed: each search Anthropic ran, each
   * prompt Google grounded with Search, each call to an OpenAI search model.
   */
  web_search_per_search?: number;
}

/** USD per million tokens → nano-credits per token at 1 credit = 0.01 USD. Exact for prices with up to 5 decimals. */
export const NANO_PER_TOKEN_PER_USD_PER_MILLION = 100_000;
const usd = (perMillion: number): number => Math.round(perMillion * NANO_PER_TOKEN_PER_USD_PER_MILLION);
const price = (input: number, output: number, cacheRead: number, cacheWrite: number): TokenPrices => ({
  input: usd(input),
  output: usd(output),
  cache_read: usd(cacheRead),
  cache_write: usd(cacheWrite),
});
/** USD per search → nano-credits per search. */
const perSearch = (usdEach: number): number => Math.round(usdEach * 1e11);
// Published fees: Anthropic 10 USD per 1,000 searches; Google 35 USD per 1,000 grounded
// prompts (Gemini 2.x, beyond the free daily allowance, which the gateway does not pass on);
// OpenAI's search models 25 USD per 1,000 calls (each call searches).
const ANTHROPIC_SEARCH = perSearch(0.01);
const GOOGLE_GROUNDING = perSearch(0.035);
const OPENAI_SEARCH_CALL = perSearch(0.025);
/** Anthropic prices: 1-hour cache writes at twice the input price, and each web search. */
const claudePrice = (input: number, output: number, cacheRead: number, cacheWrite: number): ModelPricing => ({
  ...price(input, output, cacheRead, cacheWrite),
  cache_write_1h: usd(input * 2),
  web_search_per_search: ANTHROPIC_SEARCH,
});
/** Prompts over 200k tokens: the higher tier some models bill them at. */
const above200k = (tier: TokenPrices): ModelPricing['long_context'] => ({ above_tokens: 200_000, ...tier });

const ALL_FORMATS = ['text', 'json_object', 'json_schema'];
const OPENAI_TEMPERATURE = { supported: true, min: 0, max: 2 };
const NO_TEMPERATURE = { supported: false, min: 0, max: 0 };
const ANTHROPIC_TEMPERATURE = { supported: true, min: 0, max: 1 };
const GOOGLE_TEMPERATURE = { supported: true, min: 0, max: 2 };
// The Anthropic messages API has no response_format: only plain text is offered.
const ANTHROPIC_FORMATS = ['text'];

function openai(name: string, released: string, caps: Capability[], params: ModelRecord['parameters'], maxOut: number, context: number, pricing: ModelPricing): ModelRecord {
  // OpenAI bills cache writes as ordinary input.
  return { id: `openai/${name}`, provider: 'openai', name, released, capabilities: caps, parameters: params, max_output_tokens: maxOut, context_window: context, pricing };
}
/** `snapshot`: the dated name the alias `name` points to (its date is the release day). */
function anthropic(name: string, snapshot: string, caps: Capability[], maxOut: number, pricing: ModelPricing, reasoning?: string[], sampling: { temperature_or_top_p?: boolean } = {}): ModelRecord {
  const date = /-(\d{4})(\d{2})(\d{2})$/.exec(snapshot)!;
  return {
    id: `anthropic/${name}`,
    provider: 'anthropic',
    name,
    released: `${date[1]}-${date[2]}-${date[3]}`,
    snapshots: [snapshot],
    capabilities: caps,
    parameters: { temperature: ANTHROPIC_TEMPERATURE, ...(reasoning ? { reasoning_effort: reasoning } : {}), response_format_type: ANTHROPIC_FORMATS, ...sampling },
    max_output_tokens: maxOut,
    context_window: 200_000,
    pricing,
  };
}
function google(name: string, released: string, caps: Capability[], maxOut: number, pricing: ModelPricing, reasoning?: string[]): ModelRecord {
  return {
    id: `google/${name}`,
    provider: 'google',
    name,
    released,
    capabilities: caps,
    parameters: { temperature: GOOGLE_TEMPERATURE, ...(reasoning ? { reasoning_effort: reasoning } : {}), response_format_type: ALL_FORMATS },
    max_output_tokens: maxOut,
    context_window: 1_048_576,
    pricing,
  };
}

const GPT = ['tools', 'vision', 'json_output', 'prompt_caching'] as Capability[];
const REASONING_GPT = [...GPT, 'reasoning'] as Capability[];
const CLAUDE = ['tools', 'vision', 'web_search', 'prompt_caching'] as Capability[];
const THINKING_CLAUDE = [...CLAUDE, 'reasoning'] as Capability[];
const GEMINI = ['tools', 'vision', 'web_search', 'json_output', 'prompt_caching'] as Capability[];
const THINKING_GEMINI = [...GEMINI, 'reasoning'] as Capability[];
const EFFORT = ['low', 'medium', 'high'];
// OpenAI's reasoning models take neither a temperature nor top_p nor stop sequences.
const REASONING_SAMPLING = { temperature: NO_TEMPERATURE, top_p: false, stop: false };
// Claude Opus 4.1 and the 4.5 models take a temperature or top_p, not both.
const ONE_SAMPLER = { temperature_or_top_p: true };

// (Sonnet 4.x bills prompts over 200k tokens higher, but only with the 1M-context beta, which
// the catalog does not offer: its context window here is 200k, so that tier is never reached.)
const SONNET_4: ModelPricing = claudePrice(3, 15, 0.3, 3.75);

export const MODELS: readonly ModelRecord[] = [
  openai('gpt-5', '2025-08-07', REASONING_GPT, { ...REASONING_SAMPLING, reasoning_effort: ['minimal', ...EFFORT], response_format_type: ALL_FORMATS }, 128_000, 400_000, price(1.25, 10, 0.125, 1.25)),
  openai('gpt-5-mini', '2025-08-07', REASONING_GPT, { ...REASONING_SAMPLING, reasoning_effort: ['minimal', ...EFFORT], response_format_type: ALL_FORMATS }, 128_000, 400_000, price(0.25, 2, 0.025, 0.25)),
  openai('gpt-5-nano', '2025-08-07', REASONING_GPT, { ...REASONING_SAMPLING, reasoning_effort: ['minimal', ...EFFORT], response_format_type: ALL_FORMATS }, 128_000, 400_000, price(0.05, 0.4, 0.005, 0.05)),
  openai('gpt-4.1', '2025-04-14', GPT, { temperature: OPENAI_TEMPERATURE, response_format_type: ALL_FORMATS }, 32_768, 1_047_576, price(2, 8, 0.5, 2)),
  openai('gpt-4.1-mini', '2025-04-14', GPT, { temperature: OPENAI_TEMPERATURE, response_format_type: ALL_FORMATS }, 32_768, 1_047_576, price(0.4, 1.6, 0.1, 0.4)),
  openai('gpt-4.1-nano', '2025-04-14', GPT, { temperature: OPENAI_TEMPERATURE, response_format_type: ALL_FORMATS }, 32_768, 1_047_576, price(0.1, 0.4, 0.025, 0.1)),
  openai('gpt-4o', '2024-05-13', GPT, { temperature: OPENAI_TEMPERATURE, response_format_type: ALL_FORMATS }, 16_384, 128_000, price(2.5, 10, 1.25, 2.5)),
  openai('gpt-4o-mini', '2024-07-18', GPT, { temperature: OPENAI_TEMPERATURE, response_format_type: ALL_FORMATS }, 16_384, 128_000, price(0.15, 0.6, 0.075, 0.15)),
  openai('o3', '2025-04-16', REASONING_GPT, { ...REASONING_SAMPLING, reasoning_effort: EFFORT, response_format_type: ALL_FORMATS }, 100_000, 200_000, price(2, 8, 0.5, 2)),
  openai('o4-mini', '2025-04-16', REASONING_GPT, { ...REASONING_SAMPLING, reasoning_effort: EFFORT, response_format_type: ALL_FORMATS }, 100_000, 200_000, price(1.1, 4.4, 0.275, 1.1)),
  // Search models: server-side web search, but no function calling and no temperature.
  openai('gpt-4o-search-preview', '2025-03-11', ['web_search', 'json_output'], { temperature: NO_TEMPERATURE, top_p: false, response_format_type: ['text', 'json_schema'] }, 16_384, 128_000, { ...price(2.5, 10, 2.5, 2.5), web_search_per_search: OPENAI_SEARCH_CALL }),
  openai('gpt-4o-mini-search-preview', '2025-03-11', ['web_search', 'json_output'], { temperature: NO_TEMPERATURE, top_p: false, response_format_type: ['text', 'json_schema'] }, 16_384, 128_000, { ...price(0.15, 0.6, 0.15, 0.15), web_search_per_search: OPENAI_SEARCH_CALL }),
  // The original GPT-4: an 8,192-token context window (used to exercise compaction).
  openai('gpt-4', '2023-03-14', ['tools'], { temperature: OPENAI_TEMPERATURE, response_format_type: ['text'] }, 8_192, 8_192, price(30, 60, 30, 30)),

  anthropic('claude-opus-4-1', 'claude-opus-4-1-20250805', THINKING_CLAUDE, 32_000, claudePrice(15, 75, 1.5, 18.75), EFFORT, ONE_SAMPLER),
  anthropic('claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', THINKING_CLAUDE, 64_000, SONNET_4, EFFORT, ONE_SAMPLER),
  anthropic('claude-sonnet-4-0', 'claude-sonnet-4-20250514', THINKING_CLAUDE, 64_000, SONNET_4, EFFORT),
  anthropic('claude-haiku-4-5', 'claude-haiku-4-5-20251001', THINKING_CLAUDE, 64_000, claudePrice(1, 5, 0.1, 1.25), EFFORT, ONE_SAMPLER),
  anthropic('claude-3-5-haiku-latest', 'claude-3-5-haiku-20241022', CLAUDE, 8_192, claudePrice(0.8, 4, 0.08, 1)),

  google('gemini-2.5-pro', '2025-06-17', THINKING_GEMINI, 65_536, { ...price(1.25, 10, 0.125, 1.25), long_context: above200k(price(2.5, 15, 0.25, 2.5)), web_search_per_search: GOOGLE_GROUNDING }, EFFORT),
  google('gemini-2.5-flash', '2025-06-17', THINKING_GEMINI, 65_536, { ...price(0.3, 2.5, 0.03, 0.3), web_search_per_search: GOOGLE_GROUNDING }, ['none', ...EFFORT]),
  google('gemini-2.5-flash-lite', '2025-07-22', THINKING_GEMINI, 65_536, { ...price(0.1, 0.4, 0.01, 0.1), web_search_per_search: GOOGLE_GROUNDING }, ['none', ...EFFORT]),
  google('gemini-2.0-flash', '2025-02-05', GEMINI, 8_192, { ...price(0.1, 0.4, 0.025, 0.1), web_search_per_search: GOOGLE_GROUNDING }),
  google('gemini-2.0-flash-lite', '2025-02-25', ['tools', 'vision', 'json_output'], 8_192, price(0.075, 0.3, 0.075, 0.075)),
];

const BY_ID = new Map<string, ModelRecord>(MODELS.map((model) => [model.id, model]));
// A snapshot is its model under the snapshot's name (sent upstream as asked; priced alike).
for (const model of MODELS) {
  for (const snapshot of model.snapshots ?? []) {
    const id = `${model.provider}/${snapshot}`;
    BY_ID.set(id, { ...model, id, name: snapshot, snapshots: undefined, snapshotOf: model.name });
  }
}

/** A catalog model by id (`anthropic/claude-sonnet-4-5`), or one of its dated snapshots. */
export function findModel(id: string): ModelRecord | undefined {
  return BY_ID.get(id);
}

export function listModels(): ModelRecord[] {
  return [...MODELS];
}

/** The largest `max_output_tokens` of any model: agent and request `max_tokens` above it are refused. */
export const CATALOG_MAX_OUTPUT_TOKENS: number = Math.max(...MODELS.map((model) => model.max_output_tokens));

export const hasCapability = (model: ModelRecord, capability: Capability): boolean => model.capabilities.includes(capability);

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Of `cache_creation_input_tokens`, those written to Anthropic's 1-hour cache. */
  cache_creation_1h_input_tokens?: number;
  /** Web searches the provider billed for the call (see `web_search_per_search`). */
  web_search_requests?: number;
}

/**
 * Credits for one call, in nano-credits. `input_tokens` are the uncached input tokens
 * (cache reads and writes are reported apart, as Anthropic does; adapters normalise the
 * other providers to this). A prompt over the model's long-context threshold bills every
 * token of the call at that tier. Integer arithmetic throughout (BigInt, so no precision loss).
 */
export function computeCreditsNano(model: ModelRecord, usage: TokenUsage): number {
  const prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
  const long = model.pricing.long_context;
  const p: TokenPrices = long && prompt > long.above_tokens ? long : model.pricing;
  const oneHour = Math.min(usage.cache_creation_1h_input_tokens ?? 0, usage.cache_creation_input_tokens);
  const total =
    BigInt(usage.input_tokens) * BigInt(p.input) +
    BigInt(usage.output_tokens) * BigInt(p.output) +
    BigInt(usage.cache_read_input_tokens) * BigInt(p.cache_read) +
    BigInt(usage.cache_creation_input_tokens - oneHour) * BigInt(p.cache_write) +
    BigInt(oneHour) * BigInt(p.cache_write_1h ?? p.cache_write) +
    BigInt(usage.web_search_requests ?? 0) * BigInt(model.pricing.web_search_per_search ?? 0);
  return Number(total);
}

/**
 * Media models (image generation, speech, transcription). They are kept apart from the
 * chat catalog above on purpose: `findModel` and `listModels` serve chat completions,
 * messages and agents, and a media model there would be accepted as a chat model.
 * Content helpers look them up with `findMediaModel(id, capability)`.
 *
 * Media prices are not all per token, so each record says how it is billed, always in
 * integer nano-credits (1 credit = 0.01 USD):
 * - `tokens`: the provider reports token usage (gpt-image-1 text input / image output;
 *   gpt-4o-transcribe audio and text input / text output) priced like the chat catalog.
 * - `per_image`: a price per generated image by `<quality>:<size>` (dall-e-3).
 * - `per_character`: a price per input character (tts-1, tts-1-hd).
 * - `per_second`: a price per second of audio (whisper-1, reported by the provider).
 */
export type MediaCapability = 'image_generation' | 'speech' | 'transcription';

export type MediaPricing =
  | { unit: 'tokens'; input: number; output: number; audio_input?: number }
  | { unit: 'per_image'; images: Record<string, number> }
  | { unit: 'per_character'; character: number }
  | { unit: 'per_second'; second: number };

export interface MediaModelRecord {
  id: string;
  provider: ProviderName;
  name: string;
  capabilities: MediaCapability[];
  pricing: MediaPricing;
}

/** USD per unit → nano-credits per unit (1 nano-credit = 1e-11 USD). */
const usdEach = (value: number): number => Math.round(value * 1e11);

function media(name: string, capability: MediaCapability, pricing: MediaPricing): MediaModelRecord {
  return { id: `openai/${name}`, provider: 'openai', name, capabilities: [capability], pricing };
}

export const MEDIA_MODELS: readonly MediaModelRecord[] = [
  // gpt-image-1: text input 5 USD/M, image output tokens 40 USD/M.
  media('gpt-image-1', 'image_generation', { unit: 'tokens', input: usd(5), output: usd(40) }),
  // dall-e-3: 0.04 / 0.08 USD (standard) and 0.08 / 0.12 USD (hd) per image, square / wide.
  media('dall-e-3', 'image_generation', {
    unit: 'per_image',
    images: {
      'standard:1024x1024': usdEach(0.04),
      'standard:1024x1792': usdEach(0.08),
      'standard:1792x1024': usdEach(0.08),
      'hd:1024x1024': usdEach(0.08),
      'hd:1024x1792': usdEach(0.12),
      'hd:1792x1024': usdEach(0.12),
    },
  }),
  // tts-1: 15 USD per million characters; tts-1-hd: 30 USD.
  media('tts-1', 'speech', { unit: 'per_character', character: usd(15) }),
  media('tts-1-hd', 'speech', { unit: 'per_character', character: usd(30) }),
  // whisper-1: 0.006 USD per minute = 0.0001 USD per second.
  media('whisper-1', 'transcription', { unit: 'per_second', second: usdEach(0.0001) }),
  // gpt-4o(-mini)-transcribe: audio input 6 (3) USD/M, text input 2.5 (1.25), text output 10 (5).
  media('gpt-4o-transcribe', 'transcription', { unit: 'tokens', input: usd(2.5), output: usd(10), audio_input: usd(6) }),
  media('gpt-4o-mini-transcribe', 'transcription', { unit: 'tokens', input: usd(1.25), output: usd(5), audio_input: usd(3) }),
];

const MEDIA_BY_ID = new Map(MEDIA_MODELS.map((model) => [model.id, model]));

export function findMediaModel(id: string, capability: MediaCapability): MediaModelRecord | undefined {
  const model = MEDIA_BY_ID.get(id);
  return model?.capabilities.includes(capability) ? model : undefined;
}

/** Whether `id` names a media model (of any capability): a known model, of the other catalog. */
export const isMediaModelId = (id: string): boolean => MEDIA_BY_ID.has(id);

export function listMediaModels(capability?: MediaCapability): MediaModelRecord[] {
  return MEDIA_MODELS.filter((model) => !capability || model.capabilities.includes(capability));
}

/** What a media call consumed, as the provider reported it (or as the request states it). */
export interface MediaUsage {
  input_tokens?: number;
  /** Of `input_tokens`, the audio ones (priced apart when the model says so). */
  audio_input_tokens?: number;
  output_tokens?: number;
  /** `per_image`: the images made and their `<quality>:<size>` key. */
  images?: { count: number; key: string };
  characters?: number;
  seconds?: number;
}

/** Credits for one media call, in nano-credits (integer arithmetic). Unknown price keys cost the highest listed price. */
export function computeMediaCreditsNano(model: MediaModelRecord, usage: MediaUsage): number {
  const p = model.pricing;
  switch (p.unit) {
    case 'tokens': {
      const audio = BigInt(usage.audio_input_tokens ?? 0);
      const text = BigInt(usage.input_tokens ?? 0) - audio;
      return Number(text * BigInt(p.input) + audio * BigInt(p.audio_input ?? p.input) + BigInt(usage.output_tokens ?? 0) * BigInt(p.output));
    }
    case 'per_image': {
      const each = p.images[usage.images?.key ?? ''] ?? Math.max(...Object.values(p.images));
      return Number(BigInt(usage.images?.count ?? 0) * BigInt(each));
    }
    case 'per_character':
      return Number(BigInt(usage.characters ?? 0) * BigInt(p.character));
    case 'per_second':
      return Number(BigInt(Math.ceil(usage.seconds ?? 0)) * BigInt(p.second));
  }
}
