import { badRequest, payloadTooLarge, unsupportedMediaType } from '../errors';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from '../types';

/**
 * Reads and parses a JSON request body with a byte limit. Declared per route so
 * each route states its own limit (site registration 64 KiB, messages its own).
 * An oversize body is refused from Content-Length before reading, or as soon as
 * the stream passes the limit.
 */
export function jsonBody(limitBytes: number, options: { optional?: boolean } = {}): Middleware {
  return async (ctx, next) => {
    const length = ctx.get('content-length');
    const hasBody = (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      if (!options.optional) throw badRequest('request body must be a JSON object');
      ctx.request.body = undefined;
      return next();
    }
    // Size first: an oversize body is 413 whatever it claims to be.
    if (length !== '' && Number(length) > limitBytes) throw payloadTooLarge(limitBytes);
    if (!ctx.is('application/json', 'application/*+json')) throw unsupportedMediaType();
    const text = await readBody(ctx.req, limitBytes);
    try {
      ctx.request.body = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      throw badRequest('request body is not valid JSON');
    }
    if (ctx.request.body === undefined && !options.optional) throw badRequest('request body must be a JSON object');
    await next();
  };
}

/**
 * The request body as text, refusing it as soon as it passes the limit. Plain 'data'/'end'
 * listeners rather than `for await` over the request: the async iterator costs a promise
 * and a wrapper per chunk on every request of the hot path.
 */
function readBody(req: IncomingMessage, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.destroy();
        reject(payloadTooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
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
