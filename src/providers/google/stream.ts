import { InvalidUpstreamResponseError, streamFailure, UpstreamConnectionError, UpstreamHttpError } from '../errors';
import { mapGoogleFinishReason } from '../finish-reason';
import { safeJson } from '../openai/stream';
import { decodeSse } from '../sse';
import { partialUsage } from '../tokens';
import { emptyUsage, type StreamPart, type UnifiedRequest, type Usage } from '../types';
import { GoogleResponseSchema, convertGoogleUsage, fromGooglePart, groundedWithSearch, newToolCallId, withGrounding } from './response';
import { redactCredentials } from '../redact';
import { fromGroundingSupports, groundingSupports, type GroundingSupport } from '../url-citations';

/** Gemini SSE (`alt=sse`) → stream parts. The stream has no end marker: a finish reason is its end. */
export async function* parseGoogleStream(chunks: AsyncIterable<Uint8Array>, request: UnifiedRequest): AsyncGenerator<StreamPart> {
  const provider = 'google';
  const model = request.model.id;
  let started = false;
  let usage: Usage = emptyUsage();
  let finishRaw: string | undefined;
  let sawToolCall = false;
  let grounded = false;
  let producedChars = 0;
  let finalUsage = false;
  let text = ''; // the answer's text so far: grounding segments are offsets into it
  const supports: GroundingSupport[] = [];
  try {
    for await (const sse of decodeSse(chunks)) {
      const json = safeJson(sse.data) as { error?: unknown } | undefined;
      if (json && typeof json === 'object' && 'error' in json && json.error) {
        const status = Number((json.error as { code?: unknown }).code) || 500;
        throw new UpstreamHttpError('google reported an error mid-stream', { provider, model, status, body: redactCredentials(sse.data, []), contentType: 'application/json' });
      }
      const parsed = GoogleResponseSchema.safeParse(json);
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable stream chunk from google', { provider, model, retryable: false });
      const chunk = parsed.data;
      if (!started) {
        started = true;
        yield { type: 'stream-start', id: chunk.responseId ?? `gen-${newToolCallId().slice(5)}`, model: chunk.modelVersion ?? request.model.name };
      }
      if (chunk.usageMetadata) usage = convertGoogleUsage(chunk.usageMetadata);
      const candidate = chunk.candidates?.[0];
      grounded ||= groundedWithSearch(candidate);
      for (const raw of candidate?.content?.parts ?? []) {
        const part = fromGooglePart(raw);
        if (!part) continue;
        if (part.type === 'text') {
          producedChars += part.text.length;
          text += part.text;
          yield { type: 'text-delta', delta: part.text };
        } else if (part.type === 'reasoning') {
          producedChars += part.text.length;
          if (part.text) yield { type: 'reasoning-delta', delta: part.text };
          if (part.signature) yield { type: 'reasoning-signature', signature: part.signature };
        } else if (part.type === 'tool-call') {
          sawToolCall = true;
          const args = JSON.stringify(part.input);
          producedChars += args.length;
          yield { type: 'tool-input-start', id: part.id, name: part.name };
          yield { type: 'tool-input-delta', id: part.id, delta: args };
          yield part;
        }
      }
      // A chunk's grounding indexes its own sources; its segments are read against the whole
      // answer once it is in (streamed parts are pieces of the answer, so no partIndex applies).
      supports.push(...groundingSupports(candidate?.groundingMetadata));
      if (candidate?.finishReason) {
        finishRaw = candidate.finishReason;
        // The finishing chunk's usage is the call's final count.
        finalUsage = chunk.usageMetadata !== undefined;
      }
      if (!candidate && chunk.promptFeedback?.blockReason) finishRaw = chunk.promptFeedback.blockReason;
    }
    if (finishRaw === undefined) throw new UpstreamConnectionError('the google stream ended without a finish reason', { provider, model, retryable: true });
    if (!started) yield { type: 'stream-start', id: 'gen-unknown', model: request.model.name };
    for (const citation of fromGroundingSupports(supports, text)) yield { type: 'url-citation', citation };
    yield {
      type: 'finish',
      finish_reason: mapGoogleFinishReason(finishRaw, sawToolCall),
      stop_sequence: null,
      usage: withGrounding(usage, grounded),
    };
  } catch (error) {
    const failure = streamFailure(error, provider, model);
    yield { type: 'error', error: failure, usage: withGrounding(partialUsage(usage, request, producedChars, finalUsage), grounded) };
  }
}
