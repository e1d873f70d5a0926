import { partialUsage } from '../../../providers/tokens';
import type { StreamPart, UnifiedRequest, Usage } from '../../../providers/types';
import { emptyUsage } from '../../../providers/types';
import { shutdownSignals } from '../../../net/graceful-close';
import { ApiError } from '../../errors';
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

/** Why a stream still running at the end of the shutdown's drain window ended (retryable). */
export const shuttingDown = (): ApiError => new ApiError(503, 'service_unavailable', 'the server is shutting down; send the request again');

/**
 * Writes a provider stream to the client as SSE and returns the usage to bill: the
 * finish part's, or what was produced before a break. A failure after the stream began
 * ends in the client's protocol (an error event), never as a silently truncated 200.
 * When the client goes away, iteration stops, which cancels the upstream request. A
 * stream still running when the server's drain window ends (src/net/graceful-close.ts)
 * ends as an upstream failure would: the protocol's error event, billed for what was produced.
 */
export async function writeSse(ctx: AppContext, parts: AsyncIterable<StreamPart>, protocol: SseProtocol, request: UnifiedRequest): Promise<Usage | undefined> {
  ctx.respond = false;
  ctx.status = 200;
  const res = ctx.res;
  // No `Connection` header of its own: Node says keep-alive on a persistent connection, and
  // close when the client asked for it or the server is shutting down.
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  // The next part, or undefined once the shutdown's drain window is over (whichever is first).
  const { ending } = shutdownSignals(ctx.req);
  const iterator = parts[Symbol.asyncIterator]();
  let interrupt = () => {};
  const onEnding = () => interrupt();
  ending.addEventListener('abort', onEnding);
  const nextPart = () =>
    new Promise<IteratorResult<StreamPart> | undefined>((resolve, reject) => {
      if (ending.aborted) return resolve(undefined);
      interrupt = () => resolve(undefined);
      iterator.next().then(resolve, reject);
    });
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
    // (Past the drain window a slow reader is not waited for: its connection is cut soon.)
    if (!res.write(text) && !ending.aborted) await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        ending.removeEventListener('abort', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
      ending.addEventListener('abort', done);
    });
  };
  let usage: Usage | undefined;
  // What the upstream reported when the stream opened (Anthropic: the prompt's tokens).
  let opened: Usage | undefined;
  // What went out so far: a client that leaves while its writes are backed up stops the loop
  // between parts, before the parser could report the partial usage itself.
  let producedChars = 0;
  let exhausted = false;
  let finished = false;
  let cutShort = false;
  try {
    for (;;) {
      const next = await nextPart();
      if (next === undefined) {
        // The drain window is over: the same ending as a stream the upstream broke off.
        cutShort = true;
        const part = { type: 'error' as const, error: shuttingDown(), usage: partialUsage(opened ?? emptyUsage(), request, producedChars) };
        usage = part.usage;
        for (const text of protocol.encode(part)) await write(text);
        await write(protocol.encodeError(part.error));
        ctx.state.log.warn({ produced_chars: producedChars }, 'stream ended: the server is shutting down');
        break;
      }
      if (next.done) {
        exhausted = true;
        break;
      }
      const part = next.value;
      if (part.type === 'stream-start') opened = part.usage;
      if (part.type === 'text-delta' || part.type === 'reasoning-delta' || part.type === 'tool-input-delta') producedChars += part.delta.length;
      if (part.type === 'finish') {
        usage = part.usage;
        finished = true;
      }
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
    ending.removeEventListener('abort', onEnding);
    if (!exhausted) {
      // Leaving early cancels the upstream request. Cut short, the iterator may still be waiting
      // for the upstream's next part, and takes the cancellation only then: not waited for.
      const cancelled = Promise.resolve(iterator.return?.()).catch(() => undefined);
      if (!cutShort) await cancelled;
    }
    if (!res.destroyed) res.end();
  }
  // A stream that ended before the model produced anything (broken, cut short, or left by its
  // client) is not charged, as an agent run's call is not: only a finished one or output is.
  if (!finished && producedChars === 0) return undefined;
  return usage ?? partialUsage(opened ?? emptyUsage(), request, producedChars);
}
