import { startedStream } from '../../../src/api/routes/gateway/sse';
import type { StreamPart } from '../../../src/providers/types';

const text = (delta: string): StreamPart => ({ type: 'text-delta', delta });

describe('startedStream', () => {
  test('a failure as the first part is thrown (no 200 yet), and the upstream is released', async () => {
    let released = false;
    async function* failing(): AsyncGenerator<StreamPart> {
      try {
        yield { type: 'error', error: new Error('connection dropped'), usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, reasoning_tokens: 0 } } as StreamPart;
      } finally {
        released = true;
      }
    }
    await expect(startedStream(failing())).rejects.toThrow('connection dropped');
    expect(released).toBe(true);
  });

  test('a stream silent past the wait starts anyway, and still yields every part in order', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    async function* thinking(): AsyncGenerator<StreamPart> {
      await gate; // a model that sends nothing for a long time
      yield text('a');
      yield text('b');
    }
    const stream = await startedStream(thinking());
    open();
    const seen: StreamPart[] = [];
    for await (const part of stream) seen.push(part);
    expect(seen).toEqual([text('a'), text('b')]);
  });

  test('leaving early releases the upstream', async () => {
    let released = false;
    async function* endless(): AsyncGenerator<StreamPart> {
      try {
        for (;;) yield text('x');
      } finally {
        released = true;
      }
    }
    for await (const part of await startedStream(endless())) {
      expect(part).toEqual(text('x'));
      break;
    }
    expect(released).toBe(true);
  });
});
