import { partialUsage } from '../../../providers/tokens';
import type { StreamPart, UnifiedRequest, Usage } from '../../../providers/types';
import { emptyUsage } from '../../../providers/types';
import type { AppContext } from '../../types';

export interface SseProtocol {
  /** Framed SSE text for one hub part (may be none). */
  encode(part: StreamPart): string[];
  /** Framed SSE text closing the stream after a failure: the client's own error event. */
  encodeError(error: Error): string;
  /** Framed SSE text after a clean finish (e.g. `data: [DONE]`). */
  trailer?: string;
}

/** How long the 200 waits for the stream's first part (a thinking model may send nothing for long). */
const FIRST_PART_WAIT_MS = 1_000;

/**
 * A provider stream, once its first part is in or FIRST_PART_WAIT_MS have passed. A stream that
 * fails with its first part (the upstream answered 200, then sent nothing readable) throws the
 * failure instead: no byte has gone to the client yet, so it gets the same error status a
 * non-streaming call would, and nothing is billed. The returned stream yields every part.
 */
export async function startedStream(parts: AsyncIterable<StreamPart>): Promise<AsyncIterable<StreamPart>> {
  const iterator = parts[Symbol.asyncIterator]();
  const pending = iterator.next();
  let timer: NodeJS.Timeout | undefined;
  const first = await Promise.race([pending, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), FIRST_PART_WAIT_MS)))]);
  clearTimeout(timer);
  if (first && !first.done && first.value.type === 'error') {
    await iterator.return?.();
    throw first.value.error;
  }
  return (async function* () {
    try {
      for (let next = first ?? (await pending); !next.done; next = await iterator.next()) yield next.value;
    } finally {
      // Leaving early (the client went away) cancels the upstream request.
      await iterator.return?.();
    }
  })();
}

/**
 * Writes a provider stream to the client as SSE and returns the usage to bill: the
 * finish part's, or what was produced before a break. A failure after the stream began
 * ends in the client's protocol (an error event), never as a silently truncated 200.
 * When the client goes away, iteration stops, which cancels the upstream request.
 */
export async function writeSse(ctx: AppContext, parts: AsyncIterable<StreamPart>, protocol: SseProtocol, request: UnifiedRequest): Promise<Usage> {
  ctx.respond = false;
  ctx.status = 200;
  const res = ctx.res;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  // Events decoded from one upstream read arrive within the same tick: cork the socket and
  // uncork once that work is done, so they leave in one write instead of one syscall per
  // event (a 16-token completion is ~20 events). Nothing waits longer than that tick.
  let corked = false;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  const write = async (text: string) => {
    if (res.destroyed || text.length === 0) return;
    if (!corked) {
      corked = true;
      res.cork();
      process.nextTick(uncork);
    }
    if (!res.write(text)) await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  let usage: Usage | undefined;
  // What went out so far: a client that leaves while its writes are backed up stops the loop
  // between parts, before the parser could report the partial usage itself.
  let producedChars = 0;
  try {
    for await (const part of parts) {
      if (part.type === 'text-delta' || part.type === 'reasoning-delta' || part.type === 'tool-input-delta') producedChars += part.delta.length;
      if (part.type === 'finish') usage = part.usage;
      if (part.type === 'error') {
        usage = part.usage;
        if (res.destroyed) {
          // The client left, which aborted the upstream stream: not the provider's failure.
          ctx.state.log.info('client closed the connection during the stream');
          break;
        }
        for (const text of protocol.encode(part)) await write(text); // what the protocol still held
        await write(protocol.encodeError(part.error));
        ctx.state.log.warn({ error: part.error.message, cause: String((part.error.cause as Error | undefined)?.message ?? '') }, 'upstream stream failed after it began');
        break;
      }
      for (const text of protocol.encode(part)) await write(text);
      if (part.type === 'finish' && protocol.trailer) await write(protocol.trailer);
      if (res.destroyed) break; // client gone: leaving the loop cancels the upstream stream
    }
  } finally {
    if (!res.destroyed) res.end();
  }
  return usage ?? partialUsage(emptyUsage(), request, producedChars);
}
