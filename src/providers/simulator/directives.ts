/**
 * Directives in the last user message steer the simulator (see docs/simulator.md).
 * They are removed from the text the default reply echoes.
 */
export interface Directives {
  /** `checkOffered: false` (directive `tool-unoffered`) names a tool the request did not offer, as a model may for a deferred tool. */
  tools: Array<{ name: string; input: Record<string, unknown>; checkOffered?: boolean }>;
  errorStatus?: number;
  delayMs?: number;
  paceMs?: number;
  tokens?: number;
  cutAfter?: number;
  /** `[[cut-first:N]]`: like `[[cut:N]]`, but only the first time the simulator sees this exact request (a retry gets through). */
  cutFirstAfter?: number;
  /** `[[stream-error:STATUS]]`: a stream carries the provider's in-stream error event for STATUS. */
  streamErrorStatus?: number;
  think: boolean;
  /** `[[refuse]]`: the model declines; OpenAI reports the answer as `refusal` (content null), the others as text. */
  refuse?: boolean;
  /** `[[repeat:N]]`: after tool results, call the same tools again until N rounds were made. */
  repeat?: number;
  /** `[[then-error:STATUS]]`: answer the request that brings the tool results with this error. */
  thenError?: number;
  /** `[[then-delay:MS]]`: wait this long before answering a request that brings tool results. */
  thenDelayMs?: number;
  cacheRead?: number;
  cacheWrite?: number;
  /** `[[cache-write-1h:N]]`: N more cache-write tokens, to the 1-hour cache (Anthropic reports them apart). */
  cacheWrite1h?: number;
  /** `[[web-search:N]]`: the model ran N web searches (only when the request offered web search). */
  webSearches?: number;
  stopSequence?: string;
  /** `[[bad-key]]`: refuse the request's API key with 401, quoting it as OpenAI does. */
  badKey?: boolean;
  /** `[[context-window]]`: the model stopped because the context window filled up. */
  contextWindow?: boolean;
  /** `[[json:{...}]]`: answer with exactly this JSON (structured output tests). */
  json?: string;
  /** Text with every directive removed. */
  text: string;
}

// A value may hold single `]` (JSON arrays); the directive ends at the first `]]`.
const DIRECTIVE = /\[\[([a-z0-9-]+)(?::((?:[^\]]|\](?!\]))*?))?\]\]/g;

export class DirectiveError extends Error {}

export function parseDirectives(input: string): Directives {
  const directives: Directives = { tools: [], think: false, text: '' };
  const int = (name: string, value: string | undefined): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new DirectiveError(`directive [[${name}:${value ?? ''}]] needs a non-negative integer`);
    return n;
  };
  // Only the text up to the last `]]` can hold a directive: past it, every `[[` would scan to
  // the end and fail, and thousands of them would take the simulator seconds.
  const end = input.lastIndexOf(']]') + 2;
  directives.text = input
    .slice(0, end)
    .replace(DIRECTIVE, (_match, name: string, value: string | undefined) => {
      switch (name) {
        case 'tool':
        case 'tool-unoffered': {
          const [, toolName, json] = /^\s*([A-Za-z0-9_.-]+)\s*(.*)$/s.exec(value ?? '') ?? [];
          if (!toolName) throw new DirectiveError('directive [[tool:NAME {json}]] needs a tool name');
          let parsed: unknown = {};
          if (json && json.trim()) {
            try {
              parsed = JSON.parse(json);
            } catch {
              throw new DirectiveError(`directive [[tool:${toolName} ...]] has invalid JSON input`);
            }
          }
          if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new DirectiveError('tool input must be a JSON object');
          directives.tools.push({ name: toolName, input: parsed as Record<string, unknown>, ...(name === 'tool-unoffered' ? { checkOffered: false } : {}) });
          break;
        }
        case 'error':
          directives.errorStatus = int(name, value);
          break;
        case 'delay':
          directives.delayMs = int(name, value);
          break;
        case 'pace':
          directives.paceMs = int(name, value);
          break;
        case 'tokens':
          directives.tokens = int(name, value);
          break;
        case 'cut':
          directives.cutAfter = int(name, value);
          break;
        case 'cut-first':
          directives.cutFirstAfter = int(name, value);
          break;
        case 'stream-error':
          directives.streamErrorStatus = int(name, value);
          break;
        case 'think':
          directives.think = true;
          break;
        case 'refuse':
          directives.refuse = true;
          break;
        case 'repeat':
          directives.repeat = int(name, value);
          break;
        case 'then-error':
          directives.thenError = int(name, value);
          break;
        case 'then-delay':
          directives.thenDelayMs = int(name, value);
          break;
        case 'cache-read':
          directives.cacheRead = int(name, value);
          break;
        case 'cache-write':
          directives.cacheWrite = int(name, value);
          break;
        case 'cache-write-1h':
          directives.cacheWrite1h = int(name, value);
          break;
        case 'web-search':
          directives.webSearches = int(name, value);
          break;
        case 'stop':
          directives.stopSequence = value ?? '';
          break;
        case 'bad-key':
          directives.badKey = true;
          break;
        case 'context-window':
          directives.contextWindow = true;
          break;
        case 'json':
          try {
            JSON.parse(value ?? '');
          } catch {
            throw new DirectiveError('directive [[json:...]] needs valid JSON');
          }
          directives.json = value;
          break;
        default:
          return _match; // not ours: leave the text alone
      }
      return '';
    })
    .concat(input.slice(end))
    .replace(/\s+/g, ' ')
    .trim();
  return directives;
}
