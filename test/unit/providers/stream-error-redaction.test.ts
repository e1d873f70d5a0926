import { findModel } from '../../../src/providers/catalog';
import { parseAnthropicStream } from '../../../src/providers/anthropic/stream';
import { parseGoogleStream } from '../../../src/providers/google/stream';
import { parseOpenAIStream } from '../../../src/providers/openai/stream';
import { UpstreamHttpError } from '../../../src/providers/errors';
import type { StreamPart, UnifiedRequest } from '../../../src/providers/types';

const bytes = (text: string) => (async function* () {
  yield new TextEncoder().encode(text);
})();
const request = (model: string): UnifiedRequest => ({ model: findModel(model)!, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
const errorBody = async (parts: AsyncIterable<StreamPart>) => {
  for await (const part of parts) if (part.type === 'error') return (part.error as UpstreamHttpError).body ?? `${part.error.name}: ${part.error.message}`;
  throw new Error('no error part');
};

test('an error a provider reports mid-stream is relayed without anything shaped like a provider key', async () => {
  const quoted = 'Incorrect API key provided: sk-proj-****abcd1234';
  const openai = await errorBody(parseOpenAIStream(bytes(`data: ${JSON.stringify({ error: { message: quoted, type: 'invalid_request_error' } })}\n\n`), request('openai/gpt-4o')));
  const anthropic = await errorBody(parseAnthropicStream(bytes(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: quoted } })}\n\n`), request('anthropic/claude-haiku-4-5')));
  const google = await errorBody(parseGoogleStream(bytes(`data: ${JSON.stringify({ error: { code: 400, message: 'key AIzaSyA1234567890abcdef is invalid', status: 'INVALID_ARGUMENT' } })}\n\n`), request('google/gemini-2.0-flash')));
  for (const body of [openai, anthropic, google]) {
    expect(body).toContain('[redacted]');
    expect(body).not.toMatch(/sk-proj|AIzaSy/);
  }
});
