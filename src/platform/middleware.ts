import { createHash, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { z } from 'zod';
import type { Logger } from '../logger';
import { verifyPassword } from '../domain/platform';
import { findPlatformUser, platformUserAccountIds } from '../store/platform';
import { PLATFORM_DOCS_URL, PlatformError, invalidValue, platformForbidden } from './errors';
import type { PlatformContext, PlatformMiddleware } from './types';
import { BODY_MIN_RATE, encodedWith, readBodyUpTo, refuseBody, type ReadOptions } from '../read-body';
import { decodeUtf8, JsonTextError, nulField, parseJsonText } from '../json-text';
import { TokenBuckets } from '../api/middleware/rate-limit';
import { databaseUnavailable, nulInText } from '../store/db-errors';

/** Request id, one access-log line, and the platform error envelope for anything thrown. */
export function platformBasics(logger: Logger): PlatformMiddleware {
  return async (ctx, next) => {
    ctx.state.requestId = randomUUID();
    ctx.state.log = logger.child({ request_id: ctx.state.requestId, app: 'platform' });
    ctx.set('X-Request-ID', ctx.state.requestId);
    const started = performance.now();
    try {
      await next();
    } catch (thrown) {
      const error = thrown instanceof PlatformError ? thrown : asPlatformError(thrown, [ctx.request.body, ctx.query]);
      if (error.status >= 500) ctx.state.log.error({ err: thrown }, 'unhandled error');
      ctx.status = error.status;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.body = { message: error.message, documentation_url: PLATFORM_DOCS_URL, ...(error.errors ? { errors: error.errors } : {}) };
    } finally {
      ctx.state.log.info({ method: ctx.method, path: ctx.path, status: ctx.status, duration_ms: Math.round(performance.now() - started) }, 'request');
    }
  };
}

/** `inputs`: the request's parsed body and query, to name the field an error is about. */
function asPlatformError(thrown: unknown, inputs: unknown[]): PlatformError {
  const code = (thrown as { code?: string }).code;
  // Postgres text and jsonb cannot hold U+0000: a bad input, and the statement wrote nothing.
  if (nulInText(thrown)) {
    const field = nulField(inputs) ?? 'body';
    return invalidValue('request', field, 'text values must not contain the NUL character (U+0000)');
  }
  if (code === '23505') return new PlatformError(409, 'Conflict', [{ resource: 'request', type: 'value_unavailable', message: 'the value is already taken' }]);
  // A foreign key violation here means the parent (app, environment) was deleted by a
  // concurrent request after this one found it: the same answer as if it had been absent.
  if (code === '23503') return new PlatformError(404, 'Not Found', [{ resource: 'request', type: 'value_unavailable', message: 'the resource was deleted' }]);
  if (databaseUnavailable(thrown)) return new PlatformError(503, 'Service Unavailable', undefined, { 'Retry-After': '1' });
  return new PlatformError(500, 'Internal Server Error');
}

const unauthorized = (message: string) =>
  new PlatformError(401, 'Authentication Error', [{ resource: 'authentication', type: 'access_error', message }], { 'WWW-Authenticate': 'Basic realm="platform", charset="UTF-8"' });

/**
 * Token buckets per user name and per client address, both taken: 429 in the platform
 * envelope. Keyed by the name, not the whole credential, so guessing passwords for one user
 * (each guess a different header) drains one bucket.
 */
export function platformRateLimit(perSecond: number, burst: number): PlatformMiddleware {
  const buckets = new TokenBuckets(perSecond, burst);
  return async (ctx, next) => {
    const user = basicUserName(ctx.get('authorization'));
    const waits = [buckets.take(`ip:${ctx.ip}`), ...(user !== undefined ? [buckets.take(`user:${createHash('sha256').update(user).digest('base64')}`)] : [])];
    const wait = Math.max(...waits);
    if (wait > 0) {
      throw new PlatformError(429, 'Too Many Requests', [{ resource: 'request', message: `too many requests; retry in ${wait} s` }], { 'Retry-After': String(wait) });
    }
    await next();
  };
}

/** `user:password` of an HTTP Basic header, or undefined. */
function basicCredentials(header: string): string | undefined {
  const encoded = /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1];
  return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined;
}
const basicUserName = (header: string): string | undefined => basicCredentials(header)?.split(':')[0];

/** HTTP Basic against platform users (scrypt-hashed passwords). */
export function basicAuth(db: Pool): PlatformMiddleware {
  return async (ctx, next) => {
    const decoded = basicCredentials(ctx.get('authorization'));
    if (decoded === undefined) throw unauthorized('HTTP Basic credentials are required');
    const colon = decoded.indexOf(':');
    // No user name holds U+0000 (Postgres text cannot): refused here, not as a failed query.
    if (colon < 1 || decoded.slice(0, colon).includes('\0')) throw unauthorized('malformed Basic credentials');
    const user = await findPlatformUser(db, decoded.slice(0, colon));
    // Compare against a fixed hash when the user is unknown, so timing does not reveal usernames.
    const ok = await verifyPassword(decoded.slice(colon + 1), user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok) throw unauthorized('invalid username or password');
    ctx.state.user = { id: user.id, username: user.username, accountIds: await platformUserAccountIds(db, user.id) };
    await next();
  };
}
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$' + Buffer.alloc(64).toString('base64');

export function parsePlatform<S extends z.ZodType>(schema: S, input: unknown, resource: string, field = 'body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  // An unknown member is named itself (its issue's path is the object holding it).
  const at = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
  const path = at.map(String).join('.') || field;
  // A required member that is not there is `missing_value`; anything else sent is `invalid_value`.
  const missing = issue.code === 'invalid_type' && issue.path.length > 0 && valueAt(input, issue.path) === undefined;
  if (missing) throw new PlatformError(400, 'Bad Request', [{ resource, field: path, type: 'missing_value', message: `${path} is required` }]);
  throw invalidValue(resource, path, issue.message);
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let value = input;
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

/** A path parameter (named as in the OpenAPI document): 400 naming it when it does not parse. */
export const parsePathParam = <S extends z.ZodType>(schema: S, value: unknown, resource: string, param: string): z.infer<S> => parsePlatform(schema, value, resource, param);

/** The account id, once it is known to be one of the user's (else 403). Invalid UUIDs are 400. */
export function requireAccount(ctx: PlatformContext, accountId: string, uuid: z.ZodType<string>): string {
  const id = parsePathParam(uuid, accountId, 'account', 'account'); // lower-cased, as the database returns ids
  if (!ctx.state.user!.accountIds.includes(id)) throw platformForbidden('account', 'you are not authorized for this account');
  return id;
}

/** Reads the body up to `limit` bytes, refusing larger ones with 413 before reading them. */
export async function readRaw(ctx: PlatformContext, limit: number, options: ReadOptions = {}): Promise<Buffer> {
  const encoding = encodedWith(ctx.req);
  if (encoding) throw refuseBody(ctx, () => new PlatformError(415, 'Unsupported Media Type', [{ resource: 'request', field: 'Content-Encoding', type: 'invalid_value', message: `${encoding} is not supported; send the body uncompressed` }]));
  return readBodyUpTo(ctx, limit, () => new PlatformError(413, 'Payload Too Large', [{ resource: 'request', type: 'invalid_value', message: `the body exceeds ${limit} bytes` }]), options);
}

export async function readJson(ctx: PlatformContext, limit: number): Promise<unknown> {
  const raw = await readRaw(ctx, limit, {
    minRate: {
      ...BODY_MIN_RATE,
      tooSlow: () => new PlatformError(408, 'Request Timeout', [{ resource: 'request', type: 'invalid_value', message: `the body arrived slower than ${BODY_MIN_RATE.bytesPerSecond} bytes a second` }]),
    },
  });
  // Every operation that reads a JSON body requires one (the OpenAPI document says so).
  if (raw.length === 0) throw new PlatformError(400, 'Bad Request', [{ resource: 'request', field: 'body', type: 'missing_value', message: 'a JSON body is required' }]);
  if (!ctx.is('application/json')) throw invalidValue('request', 'Content-Type', 'must be application/json');
  try {
    // Kept on the request, so an error the database raises later can name the field.
    ctx.request.body = parseJsonText(decodeUtf8(raw));
    return ctx.request.body;
  } catch (error) {
    if (!(error instanceof JsonTextError)) throw error;
    throw invalidValue('request', error.path ?? 'body', error.kind === 'syntax' ? 'is not valid JSON' : error.message);
  }
}
