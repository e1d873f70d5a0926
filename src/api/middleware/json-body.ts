import { badRequest, payloadTooLarge, unsupportedMediaType } from '../errors';
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
    if (!ctx.is('application/json', 'application/*+json')) throw unsupportedMediaType();
    if (length !== '' && Number(length) > limitBytes) throw payloadTooLarge(limitBytes);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limitBytes) {
        ctx.req.destroy();
        throw payloadTooLarge(limitBytes);
      }
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    try {
      ctx.request.body = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      throw badRequest('request body is not valid JSON');
    }
    if (ctx.request.body === undefined && !options.optional) throw badRequest('request body must be a JSON object');
    await next();
  };
}
