import type { IncomingMessage, Server, ServerResponse } from 'node:http';

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
}

/**
 * Refuses a body over the limit from its declared Content-Length, before reading any of it.
 * `tooLarge` builds the caller's own 413 error.
 */
export function refuseDeclaredOversize(exchange: Exchange, limit: number, tooLarge: () => Error, options: Pick<ReadOptions, 'escapedSlashCountsOnce'> = {}): void {
  const declared = exchange.req.headers['content-length'];
  const bound = options.escapedSlashCountsOnce ? 2 * limit : limit;
  if (declared !== undefined && Number(declared) > bound) throw refuseBody(exchange, tooLarge);
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
   * there, as an oversize body is (see refuseBody).
   */
  onProgress?: (bytesSoFar: number) => Error | undefined;
  /**
   * A body of which a window of `windowMs` (each in turn, from the start) brings less than this
   * rate is refused with `tooSlow()`: a client dripping its body, from the start or after a
   * fast beginning, must not hold what it holds for minutes.
   */
  minRate?: { bytesPerSecond: number; windowMs: number; tooSlow: () => Error };
  /**
   * A JSON body carrying base64: each `\/` counts as one byte against the limit. JSON writers
   * that escape `/` (PHP's json_encode, the CMS plugins' default) make base64 longer by as
   * much as its share of `/`, which depends on the data (a quiet PCM recording has many): the
   * limit then holds the content, not its escaping. The body itself may be at most twice the limit.
   */
  escapedSlashCountsOnce?: boolean;
}

/** How many `\/` pairs a chunk holds, the one that straddles it and the previous chunk included. */
function escapedSlashes(chunk: Buffer, previousByte: number | undefined): number {
  let count = previousByte === 0x5c && chunk[0] === 0x2f ? 1 : 0;
  for (let at = chunk.indexOf('\\/'); at !== -1; at = chunk.indexOf('\\/', at + 2)) count++;
  return count;
}

/** Requests answered `100 Continue`: their client is sending the body. */
const continueSent = new WeakSet<IncomingMessage>();

export function readBodyUpTo(exchange: Exchange, limit: number, tooLarge: () => Error, options: ReadOptions = {}): Promise<Buffer> {
  refuseDeclaredOversize(exchange, limit, tooLarge, options);
  const { req, res } = exchange;
  // A client that sent `Expect: 100-continue` waits for this before sending the body; it is
  // sent only once the request has passed everything before the read (authentication, rate
  // limit, size), so a refused client never uploads its body (see continueWhenBodyIsRead).
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) {
    res.writeContinue();
    continueSent.add(req);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const { onProgress, minRate } = options;
    const refuse = (error: () => Error, drain: boolean) => {
      cleanup();
      if (drain) return reject(refuseBody(exchange, error, size));
      req.pause();
      reject(closingAfterResponse(exchange, error));
    };
    let windowStart = 0; // the size when the current window began
    const rateCheck = minRate
      ? setInterval(() => {
          if (size - windowStart < (minRate.bytesPerSecond * minRate.windowMs) / 1000) refuse(minRate.tooSlow, false);
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
    let discount = 0; // escaped slashes, when each counts once
    let lastByte: number | undefined;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (options.escapedSlashCountsOnce) {
        discount += escapedSlashes(chunk, lastByte);
        lastByte = chunk[chunk.length - 1];
        if (size > 2 * limit) return refuse(tooLarge, true);
      }
      if (size - discount > limit) return refuse(tooLarge, true);
      const refused = onProgress?.(size);
      if (refused) return refuse(() => refused, true);
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
 * The least rate a request body must keep, over each 15-second window while it is read: a
 * body stalled or dripping holds a connection and a request's slot, so it is refused (408)
 * after 15 seconds rather than after Node's 300-second request timeout. 8 KiB/s lets any
 * client with a working connection through. (Each server words its own 408.)
 */
export const BODY_MIN_RATE = { bytesPerSecond: 8 * 1024, windowMs: 15_000 };

/** How much of a refused body is read and discarded, and for how long, before the connection closes. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
export const DRAIN_LIMIT_MS = 10_000;

/**
 * The error to throw for a request whose body is refused (too large, of a media type the route
 * does not take, no room for it now): a body the client is still sending is read and
 * discarded, up to a bound, while the refusal goes out on a connection kept open. Closing at
 * once would reset the connection under a client still uploading (Node's fetch and the SDKs
 * built on it then report a connection error, never the refusal, and retry the whole upload);
 * reading the remainder whatever its size, as Node does for a body nobody read, would let one
 * request hold a connection for gigabytes. Past the bound the connection is closed; a body
 * declared larger than the bound allows, or a client waiting for `100 Continue` (it has sent
 * nothing), gets its answer on a connection closed after it. `bytesRead`: what the caller read.
 */
export function refuseBody(exchange: Exchange, refusal: () => Error, bytesRead = 0): Error {
  const { req } = exchange;
  const waitingForContinue = req.headers.expect?.toLowerCase() === '100-continue' && !continueSent.has(req);
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  const beyondBound = Number.isFinite(declared) && declared - bytesRead > DRAIN_LIMIT_BYTES;
  // A body already in full: nothing to drain, and the connection may carry the next request.
  if (req.complete) return refusal();
  if (waitingForContinue || beyondBound) return closingAfterResponse(exchange, refusal);
  drainWithinBounds(req);
  req.resume();
  return refusal();
}

/** Requests whose remaining body is being discarded within the bounds. */
const draining = new WeakSet<IncomingMessage>();

/**
 * Discards what is left of a request's body, closing the connection past DRAIN_LIMIT_BYTES or
 * DRAIN_LIMIT_MS. Called for a refused body (refuseBody), and for any request answered before
 * its body was read (a 401, a 404, ...), which Node would otherwise read to its end whatever
 * its size or pace (see boundUnreadBodies).
 */
function drainWithinBounds(req: IncomingMessage): void {
  if (draining.has(req)) return;
  draining.add(req);
  let drained = 0;
  const stop = () => req.socket.destroy();
  const timer = setTimeout(stop, DRAIN_LIMIT_MS);
  timer.unref();
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) stop();
  };
  req.on('data', onData);
  const done = () => {
    clearTimeout(timer);
    req.off('data', onData);
  };
  // The connection may carry the client's next request once this body has ended.
  req.once('end', done);
  req.once('close', done);
}

/**
 * Every request answered while its body is still arriving has the rest discarded within the
 * drain bounds. (Node reads and discards such a body itself once the answer is sent, to the
 * end, however large or slow: one request could hold a connection for gigabytes or hours.)
 */
export function boundUnreadBodies(req: IncomingMessage, res: ServerResponse): void {
  // 'prefinish' comes before Node's own 'finish' handling, which would dump the body (a dumped
  // body's bytes are dropped before any 'data' listener could count them): reading it here,
  // Node leaves it to us.
  res.once('prefinish', () => {
    if (req.complete || req.destroyed || draining.has(req)) return;
    drainWithinBounds(req);
    req.resume();
  });
}

/**
 * A refusal after which the connection must not carry more of this client's bytes (a body
 * dripping too slowly): the answer goes out with `Connection: close` and Node closes the
 * connection once it is sent.
 */
function closingAfterResponse(exchange: Exchange, refusal: () => Error): Error {
  exchange.res.setHeader('Connection', 'close');
  return refusal();
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
