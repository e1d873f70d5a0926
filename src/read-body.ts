import type { IncomingMessage, Server, ServerResponse } from 'node:http';

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
}

/**
 * Refuses a body over the limit from its declared Content-Length, before reading any of it.
 * `tooLarge` builds the caller's own 413 error.
 */
export function refuseDeclaredOversize(exchange: Exchange, limit: number, tooLarge: () => Error): void {
  const declared = exchange.req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw closingAfterResponse(exchange, tooLarge);
}

/**
 * Reads a whole request body of at most `limit` bytes, refusing it from Content-Length or as
 * soon as the stream passes the limit. Plain 'data'/'end' listeners rather than `for await`:
 * the async iterator costs a promise and a wrapper per chunk on the hot path, and leaving it
 * early destroys the socket.
 */
export interface ReadOptions {
  /**
   * Called with the bytes read so far after each chunk: an Error it returns refuses the body
   * there (the connection closes after the answer, as for an oversize body).
   */
  onProgress?: (bytesSoFar: number) => Error | undefined;
  /**
   * A body of which a window of `windowMs` (each in turn, from the start) brings less than this
   * rate is refused with `tooSlow()`: a client dripping its body, from the start or after a
   * fast beginning, must not hold what it holds for minutes.
   */
  minRate?: { bytesPerSecond: number; windowMs: number; tooSlow: () => Error };
}

export function readBodyUpTo(exchange: Exchange, limit: number, tooLarge: () => Error, options: ReadOptions = {}): Promise<Buffer> {
  refuseDeclaredOversize(exchange, limit, tooLarge);
  const { req, res } = exchange;
  // A client that sent `Expect: 100-continue` waits for this before sending the body; it is
  // sent only once the request has passed everything before the read (authentication, rate
  // limit, size), so a refused client never uploads its body (see continueWhenBodyIsRead).
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const { onProgress, minRate } = options;
    const refuse = (error: () => Error) => {
      cleanup();
      req.pause();
      reject(closingAfterResponse(exchange, error));
    };
    let windowStart = 0; // the size when the current window began
    const rateCheck = minRate
      ? setInterval(() => {
          if (size - windowStart < (minRate.bytesPerSecond * minRate.windowMs) / 1000) refuse(minRate.tooSlow);
          windowStart = size;
        }, minRate.windowMs)
      : undefined;
    const cleanup = () => {
      clearInterval(rateCheck);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return refuse(tooLarge);
      const refused = onProgress?.(size);
      if (refused) return refuse(() => refused);
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    // A client that goes away mid-body: 'close' without 'end'.
    const onClose = () => {
      cleanup();
      reject(Object.assign(new Error('request aborted'), { code: 'ECONNRESET' }));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * The rest of an oversize body is never read: the 413 goes out with `Connection: close`, so
 * Node closes the connection once it is sent. (Destroying the socket instead would reset the
 * connection and the client would never see the 413; keeping it alive would make Node read
 * and discard the whole remainder.)
 */
function closingAfterResponse(exchange: Exchange, tooLarge: () => Error): Error {
  exchange.res.setHeader('Connection', 'close');
  return tooLarge();
}

/**
 * `Expect: 100-continue`: Node answers 100 at once unless the server handles the request
 * itself; with this, the app does, and readBodyUpTo sends the 100 when it starts reading.
 */
export function continueWhenBodyIsRead(server: Server): void {
  server.on('checkContinue', (request, response) => server.emit('request', request, response));
}

/** The body's Content-Encoding when it is compressed (bodies are read as sent), else undefined. */
export function encodedWith(req: IncomingMessage): string | undefined {
  const encoding = (req.headers['content-encoding'] ?? '').trim();
  return encoding !== '' && encoding.toLowerCase() !== 'identity' ? encoding : undefined;
}
