/**
 * Server-Sent Events decoding for upstream streams. Bytes may split anywhere (inside a
 * UTF-8 sequence, a line or a CRLF); events are yielded whole.
 */
export interface SseEvent {
  event?: string;
  data: string;
}

export async function* decodeSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  const flushLine = function* (line: string): Generator<SseEvent> {
    if (line === '') {
      if (data.length > 0) yield { event, data: data.join('\n') };
      event = undefined;
      data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const newline = buffer.indexOf('\n', start);
      if (newline === -1) break;
      let line = buffer.slice(start, newline);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      start = newline + 1;
      yield* flushLine(line);
    }
    buffer = buffer.slice(start);
  }
  // At the end, a line cut off before its newline is dropped (the SSE spec drops the whole
  // pending event): a stream cut mid-JSON then reads as unfinished (retryable), not as an
  // unreadable chunk. Complete lines of an event missing its final blank line still count.
  yield* flushLine('');
}

/** One SSE message as text. */
export const sseMessage = (data: unknown, event?: string): string =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
