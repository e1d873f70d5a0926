import { createHash } from 'node:crypto';
import { findModel, type ModelRecord, type ProviderName } from '../catalog';
import { DirectiveError, parseDirectives, type Directives } from './directives';
import { jsonAnswer } from './json-answer';

/** What every protocol reduces its request to. */
export interface SimInput {
  provider: ProviderName;
  model: string;
  /** Text of the last user turn ('' when that turn holds only tool results). */
  lastUserText: string;
  /**
   * The most recent user text of the conversation and the assistant tool-call rounds made
   * since it (for `[[repeat:N]]` tool loops; set when the last user turn holds only results).
   */
  promptText?: string;
  toolRounds?: number;
  /** Contents of the tool results in the last user turn. */
  toolResults: string[];
  toolsOffered: string[];
  /** The request offered the provider's native web search (Anthropic's tool, Google Search, OpenAI's options). */
  webSearchOffered?: boolean;
  /** The web search tool's `max_uses`, when it set one. */
  webSearchMaxUses?: number;
  /** Characters of all prompt text (system, messages, tool definitions): input tokens are a quarter of it. */
  inputChars: number;
  maxTokens?: number;
  /** Raw request body, for the deterministic id. */
  rawBody: string;
  /** The JSON Schema of a structured-output request (`response_format: json_schema`). */
  responseSchema?: Record<string, unknown>;
  /** Images in the last user turn, each as its media type or URL (protocols that report them). */
  images?: string[];
  /** The API key the request carried (Authorization, x-api-key or x-goog-api-key), for `[[bad-key]]`. */
  credential?: string;
}

export class SimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly kind: 'generic' | 'context' | 'model' = 'generic',
  ) {
    super(message);
  }
}

export interface Plan {
  id: string;
  model: ModelRecord;
  reasoning: string[];
  words: string[];
  toolCalls: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  finish: 'stop' | 'length' | 'tool_calls' | 'stop_sequence' | 'context_window';
  stopSequence?: string;
  /** `cacheWrite` includes `cacheWrite1h`. */
  usage: { input: number; output: number; reasoning: number; cacheRead: number; cacheWrite: number; cacheWrite1h: number };
  /** Web searches the model ran (the request offered web search and asked for them). */
  webSearches: number;
  /** The words are a refusal (`[[refuse]]`). */
  refusal: boolean;
  delayMs: number;
  paceMs: number;
  cutAfter?: number;
  /** Cut like `cutAfter`, the first time this request (same body, same plan id) is seen only. */
  cutFirstAfter?: number;
  streamErrorStatus?: number;
}

/** The pages a searched answer cites: one per search the model ran. */
export const searchResults = (plan: Plan) =>
  Array.from({ length: plan.webSearches }, (_, i) => ({ url: `https://example.com/result-${i + 1}`, title: `Result ${i + 1}` }));

/**
 * The span of a searched answer that OpenAI's annotations and Gemini's grounding supports
 * cite: all its words after the first (so offsets are tested away from zero).
 */
export function citedSpan(plan: Plan): { text: string; start: number } {
  const text = plan.words.join(' ');
  return { text, start: plan.words.length > 1 ? plan.words[0]!.length + 1 : 0 };
}

const FILLER = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit'];

export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);

/** Deterministic: the same request always gets the same plan (ids included). */
export function planResponse(input: SimInput): Plan {
  const model = findModel(`${input.provider}/${input.model}`);
  if (!model) throw new SimError(404, `model ${input.model} does not exist`, 'model');
  let directives: Directives;
  try {
    directives = input.lastUserText ? parseDirectives(input.lastUserText) : { tools: [], think: false, text: '' };
    if (!input.lastUserText && input.promptText) {
      // A tool loop: the prompt's tool calls again, until `[[repeat:N]]` rounds were made.
      const prompt = parseDirectives(input.promptText);
      if (prompt.repeat !== undefined && (input.toolRounds ?? 0) < prompt.repeat) directives = { ...directives, tools: prompt.tools };
      else if (prompt.thenError !== undefined) directives = { ...directives, errorStatus: prompt.thenError };
      if (prompt.thenDelayMs !== undefined) directives = { ...directives, delayMs: prompt.thenDelayMs };
    }
  } catch (error) {
    if (error instanceof DirectiveError) throw new SimError(400, error.message);
    throw error;
  }
  // A request that offers no tools at all (a compaction summary quoting a transcript's
  // directives) is answered with text: only `tool-unoffered` calls a tool nobody offered.
  if (input.toolsOffered.length === 0) directives = { ...directives, tools: directives.tools.filter((tool) => tool.checkOffered === false) };
  const hash = createHash('sha256').update(input.rawBody).digest('hex');
  const inputTokens = estimateTokens(input.inputChars);
  const base = { delayMs: directives.delayMs ?? 0, paceMs: directives.paceMs ?? 0, cutAfter: directives.cutAfter, cutFirstAfter: directives.cutFirstAfter, streamErrorStatus: directives.streamErrorStatus };
  if (directives.badKey) {
    // OpenAI's answer to a wrong key quotes it, masked but for its first and last characters.
    const key = input.credential ?? '';
    throw new SimError(401, `Incorrect API key provided: ${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`);
  }
  if (directives.errorStatus !== undefined) throw Object.assign(new SimError(directives.errorStatus, `simulated error ${directives.errorStatus}`), base);
  if (inputTokens > model.context_window) {
    throw Object.assign(new SimError(400, `prompt is too long: ${inputTokens} tokens > ${model.context_window} maximum`, 'context'), {
      inputTokens,
      limit: model.context_window,
    });
  }
  for (const tool of directives.tools) {
    if (tool.checkOffered !== false && !input.toolsOffered.includes(tool.name)) throw new SimError(400, `tool ${tool.name} was not offered in this request`);
  }

  let text: string;
  let refusal = false;
  if (directives.json !== undefined) text = directives.json;
  else if (directives.tokens !== undefined) text = Array.from({ length: directives.tokens }, (_, i) => FILLER[i % FILLER.length]).join(' ');
  else if (directives.tools.length > 0) text = '';
  else if (input.responseSchema) text = JSON.stringify(jsonAnswer(input.responseSchema, directives.text));
  else if (input.images?.length) text = `A simulated image (${input.images.join('; ')})`;
  else if (directives.refuse) {
    text = "I can't help with that.";
    refusal = true;
  } else if (input.lastUserText) text = directives.text ? `You said: ${directives.text}` : 'OK.';
  else if (input.toolResults.length > 0) text = `Tool results: ${input.toolResults.join(' | ')}`;
  else text = 'OK.';

  const reasoning = directives.think ? `Thinking about: ${directives.text || 'the request'}`.split(' ') : [];
  let words = text ? text.split(' ') : [];
  let finish: Plan['finish'] = directives.contextWindow ? 'context_window' : directives.tools.length > 0 ? 'tool_calls' : directives.stopSequence !== undefined ? 'stop_sequence' : 'stop';
  const budget = input.maxTokens;
  let reasoningKept = reasoning;
  if (budget !== undefined && reasoning.length + words.length > budget) {
    reasoningKept = reasoning.slice(0, budget);
    words = words.slice(0, Math.max(0, budget - reasoningKept.length));
    finish = 'length';
  }
  const toolCalls = finish === 'length' || finish === 'context_window' ? [] : directives.tools.map((tool, i) => ({ id: `call_${hash.slice(0, 16)}_${i}`, name: tool.name, input: tool.input }));
  const toolTokens = toolCalls.reduce((sum, call) => sum + estimateTokens(JSON.stringify(call.input).length), 0);
  const cacheRead = Math.min(directives.cacheRead ?? 0, inputTokens);
  const cacheWrite1h = Math.min(directives.cacheWrite1h ?? 0, inputTokens - cacheRead);
  const cacheWrite = Math.min((directives.cacheWrite ?? 0) + cacheWrite1h, inputTokens - cacheRead);
  return {
    id: hash.slice(0, 24),
    model,
    reasoning: reasoningKept,
    words,
    toolCalls,
    finish,
    stopSequence: finish === 'stop_sequence' ? directives.stopSequence : undefined,
    usage: {
      input: inputTokens - cacheRead - cacheWrite,
      output: reasoningKept.length + words.length + toolTokens,
      reasoning: reasoningKept.length,
      cacheRead,
      cacheWrite,
      cacheWrite1h,
    },
    // A model searches at most as often as the tool allows (Anthropic's `max_uses`).
    webSearches: input.webSearchOffered ? Math.min(directives.webSearches ?? 0, input.webSearchMaxUses ?? Infinity) : 0,
    refusal,
    ...base,
  };
}

/** Words as stream deltas: the first bare, the rest with their leading space. */
export const wordDeltas = (words: string[]): string[] => words.map((word, i) => (i === 0 ? word : ` ${word}`));
