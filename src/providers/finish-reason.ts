import type { FinishReason, UnifiedFinishReason } from './types';

export function mapOpenAIFinishReason(raw: string | null | undefined): FinishReason {
  const table: Record<string, UnifiedFinishReason> = {
    stop: 'stop',
    length: 'length',
    tool_calls: 'tool-calls',
    function_call: 'tool-calls',
    content_filter: 'content-filter',
  };
  return { unified: (raw && table[raw]) || 'other', raw: raw ?? null };
}

export function mapAnthropicStopReason(raw: string | null | undefined): FinishReason {
  const table: Record<string, UnifiedFinishReason> = {
    end_turn: 'stop',
    pause_turn: 'stop',
    stop_sequence: 'stop-sequence',
    max_tokens: 'length',
    tool_use: 'tool-calls',
    refusal: 'content-filter',
    model_context_window_exceeded: 'context-window',
  };
  return { unified: (raw && table[raw]) || 'other', raw: raw ?? null };
}

/** Gemini finish reasons; a function call ends with STOP, so the caller passes whether one was made. */
export function mapGoogleFinishReason(raw: string | null | undefined, hasToolCalls: boolean): FinishReason {
  if (raw === 'STOP' || raw == null) return { unified: hasToolCalls ? 'tool-calls' : 'stop', raw: raw ?? null };
  if (raw === 'MAX_TOKENS') return { unified: 'length', raw };
  if (['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'].includes(raw)) return { unified: 'content-filter', raw };
  return { unified: 'other', raw };
}

/** Unified → the two public shapes. */
export function toOpenAIFinishReason(reason: FinishReason): string {
  switch (reason.unified) {
    case 'stop':
    case 'stop-sequence':
      return 'stop';
    case 'length':
    case 'context-window':
      return 'length';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return 'stop';
  }
}

export function toAnthropicStopReason(reason: FinishReason): string {
  switch (reason.unified) {
    case 'stop-sequence':
      return 'stop_sequence';
    case 'length':
      return 'max_tokens';
    case 'tool-calls':
      return 'tool_use';
    case 'content-filter':
      return 'refusal';
    case 'context-window':
      return 'model_context_window_exceeded';
    default:
      return 'end_turn';
  }
}
