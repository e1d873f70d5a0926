import { badRequest, BODY_MIN_RATE, payloadTooLarge, unsupportedEncoding, unsupportedMediaType } from '../errors';
import { encodedWith, readBodyUpTo, refuseBody, refuseDeclaredOversize } from '../../read-body';
import { decodeUtf8, JsonTextError, parseJsonText } from '../../json-text';
import type { AppContext, Middleware } from '../types';

/**
 * Reads and parses a JSON request body with a byte limit. Declared per route so
 * each route states its own limit (site registration 64 KiB, messages its own).
 * An oversize body is refused from Content-Length before reading, or as soon as
 * the stream passes the limit.
 */
export function jsonBody(limitBytes: number, options: { optional?: boolean; accepted?: string; itemsOf?: string; escapedSlashCountsOnce?: boolean } = {}): Middleware {
  return async (ctx, next) => {
    const length = ctx.get('content-length');
    const hasBody = (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      if (!options.optional) throw badRequest('request body must be a JSON object');
      ctx.request.body = undefined;
      return next();
    }
    // Size first: an oversize body is 413 whatever it claims to be.
    const tooLarge = () => payloadTooLarge(limitBytes);
    refuseDeclaredOversize(ctx, limitBytes, tooLarge, options);
    if (!ctx.is('application/json', 'application/*+json')) throw refuseBody(ctx, () => unsupportedMediaType(options.accepted));
    refuseEncodedBody(ctx);
    const bytes = await readBodyUpTo(ctx, limitBytes, tooLarge, { minRate: BODY_MIN_RATE, escapedSlashCountsOnce: options.escapedSlashCountsOnce });
    try {
      ctx.request.body = bytes.length === 0 ? undefined : parseJsonText(decodeUtf8(bytes), { itemsOf: options.itemsOf });
    } catch (error) {
      throw error instanceof JsonTextError ? badRequest(error.message, error.path) : error;
    }
    if (ctx.request.body === undefined && !options.optional) throw badRequest('request body must be a JSON object');
    await next();
  };
}

/** A body sent compressed (`Content-Encoding: gzip`) is refused with 415 rather than misread. */
export function refuseEncodedBody(ctx: AppContext): void {
  const encoding = encodedWith(ctx.req);
  if (encoding) throw refuseBody(ctx, () => unsupportedEncoding(encoding));
}
