import { decodeSse } from '../../../src/providers/sse';

async function* bytes(chunks: Uint8Array[]) {
  for (const chunk of chunks) yield chunk;
}

async function collect(chunks: Uint8Array[]) {
  const events = [];
  for await (const event of decodeSse(bytes(chunks))) events.push(event);
  return events;
}

describe('decodeSse', () => {
  const text = 'event: message_start\r\ndata: {"a":"é"}\r\n\r\n: comment\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';

  test('decodes events, comments, multi-line data and CRLF', async () => {
    expect(await collect([new TextEncoder().encode(text)])).toEqual([
      { event: 'message_start', data: '{"a":"é"}' },
      { event: undefined, data: 'line1\nline2' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  test('the same events when bytes split anywhere, including inside a UTF-8 sequence and a CRLF', async () => {
    const encoded = new TextEncoder().encode(text);
    const whole = await collect([encoded]);
    for (let cut = 1; cut < encoded.length; cut++) {
      expect(await collect([encoded.slice(0, cut), encoded.slice(cut)])).toEqual(whole);
    }
    expect(await collect([...encoded].map((byte) => Uint8Array.of(byte)))).toEqual(whole);
  });

  test('a final event without its blank line is still delivered; a line cut off before its newline is dropped', async () => {
    expect(await collect([new TextEncoder().encode('data: last\n')])).toEqual([{ event: undefined, data: 'last' }]);
    // A stream cut mid-JSON: nothing is dispatched, so the parser sees an unfinished stream (retryable).
    expect(await collect([new TextEncoder().encode('data: {"a":1}\n\ndata: {"choices":[{"delta":{"content":"He')])).toEqual([{ event: undefined, data: '{"a":1}' }]);
  });
});
