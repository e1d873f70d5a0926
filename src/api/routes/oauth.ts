import Router from '@koa/router';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { refuseRepeatedCredentials, repeatedCredentialMessage } from '../../net/credential-headers';
import { z } from 'zod';
import type { Deps } from '../../deps';
import { hashSecret } from '../../auth/api-keys';
import { resolveCredential } from '../../auth/middleware';
import {
  ClientMetadataSchema,
  OAUTH_ACCESS_TOKEN_PREFIX,
  OAUTH_ACCESS_TOKEN_TTL_SECONDS,
  OAUTH_AUTH_METHODS,
  OAUTH_BODY_LIMIT_BYTES,
  OAUTH_GRANT_TYPES,
  OAUTH_SCOPES,
  OAuthError,
  normalizeClientMetadata,
  parseScope,
} from '../../domain/oauth';
import { newId } from '../../store/ids';
import { findOAuthClient, insertOAuthAccessToken, insertOAuthClient, type OAuthClientRow } from '../../store/oauth';
import { rateLimit } from '../middleware/rate-limit';
import { BODY_MIN_RATE } from '../errors';
import type { AppContext, AppState, Middleware } from '../types';
import { encodedWith, readBodyUpTo } from '../../read-body';
import { decodeUtf8, JsonTextError, nulField, parseJsonText } from '../../json-text';
import { firstIssue } from '../../first-issue';

/**
 * OAuth for site plugins (see docs/sites-mcp-analytics.md):
 * - GET  /.well-known/oauth-authorization-server  metadata (RFC 8414)
 * - POST /oauth/register  Dynamic Client Registration (RFC 7591). The initial access token is an
 *   identity-provider token of a user of the account the client will act for.
 * - POST /oauth/token     client_credentials grant (RFC 6749 §4.4) → `oat_` access token for POST /v1/sites.
 * Errors use the OAuth shape `{error, error_description}`, not the gateway envelope.
 */
/** The OAuth routes, whose errors are OAuth's `{error, error_description}`. */
export const isOAuthPath = (path: string): boolean => path.startsWith('/oauth/');

const repeatedCredentials = refuseRepeatedCredentials((header) => new OAuthError(400, 'invalid_request', repeatedCredentialMessage(header)));

export function oauthRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();

  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    const issuer = publicBaseUrl(deps, ctx);
    ctx.body = {
      issuer,
      registration_endpoint: `${issuer}/oauth/register`,
      token_endpoint: `${issuer}/oauth/token`,
      grant_types_supported: OAUTH_GRANT_TYPES,
      token_endpoint_auth_methods_supported: OAUTH_AUTH_METHODS,
      scopes_supported: OAUTH_SCOPES,
      response_types_supported: [],
    };
  });

  router.post('/oauth/register', rateLimit(deps), oauthErrors(), repeatedCredentials, async (ctx) => {
    const principal = await initialAccessToken(deps, ctx.get('authorization'));
    const body = parseJsonObject(await readBody(ctx));
    // Postgres cannot store U+0000: refused here, naming the member, in the OAuth shape.
    const nul = nulField([body]);
    if (nul) throw new OAuthError(400, 'invalid_client_metadata', `${nul}: text values must not contain the NUL character (U+0000)`);
    const parsed = ClientMetadataSchema.safeParse(body);
    if (!parsed.success) {
      const { path, text } = firstIssue(parsed.error, 'body');
      throw new OAuthError(400, path.startsWith('redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata', text);
    }
    let metadata;
    try {
      metadata = normalizeClientMetadata(parsed.data);
    } catch (error) {
      // RFC 7591 §3.2.2: a bad scope at registration is invalid_client_metadata.
      if (error instanceof OAuthError && error.code === 'invalid_scope') throw new OAuthError(400, 'invalid_client_metadata', error.message);
      throw error;
    }
    const accountIds = principal.accountIds ?? [principal.accountId];
    const accountId = parsed.data.account_id ?? (accountIds.length === 1 ? accountIds[0]! : undefined);
    if (!accountId) throw new OAuthError(400, 'invalid_client_metadata', 'account_id is required: the registering user belongs to several accounts');
    // The spec's 403 for a user not authorized for the target account; RFC 6750 names it
    // insufficient_scope (the initial access token does not cover that account).
    if (!accountIds.includes(accountId)) throw new OAuthError(403, 'insufficient_scope', 'account_id is not an account of the registering user');

    const clientId = newId('client');
    const clientSecret = `ocs_${randomBytes(32).toString('base64url')}`;
    const row = await insertOAuthClient(deps.db, {
      clientId,
      secretHash: hashSecret(clientSecret),
      accountId,
      registeredBy: principal.subject ?? 'unknown',
      metadata,
    });
    // The identity provider vouches for an account that was never provisioned here.
    if (!row) throw new OAuthError(403, 'insufficient_scope', 'account_id is not an account of this gateway');
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      client_id: clientId,
      client_secret: clientSecret,
      client_id_issued_at: Math.floor(row.created_at.getTime() / 1000),
      client_secret_expires_at: 0, // the secret does not expire
      ...withoutUndefined(metadata),
      account_id: accountId,
    };
  });

  router.post('/oauth/token', rateLimit(deps), oauthErrors(), repeatedCredentials, async (ctx) => {
    const params = parseTokenRequest(await readTokenRequest(ctx));
    const client = await authenticateClient(deps, ctx.get('authorization'), params);
    const grantType = params.grant_type;
    if (!grantType) throw new OAuthError(400, 'invalid_request', 'grant_type is required');
    if (grantType !== 'client_credentials') throw new OAuthError(400, 'unsupported_grant_type', `unsupported grant_type '${grantType}' (supported: client_credentials)`);
    const registered = String(client.metadata.scope ?? '').split(' ').filter(Boolean);
    const requested = parseScope(params.scope) ?? registered;
    const beyond = requested.filter((s) => !registered.includes(s));
    if (beyond.length > 0) throw new OAuthError(400, 'invalid_scope', `scope not registered for this client: ${beyond.join(' ')}`);

    const accessToken = `${OAUTH_ACCESS_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    await insertOAuthAccessToken(deps.db, {
      hash: hashSecret(accessToken),
      clientId: client.client_id,
      accountId: client.account_id,
      scope: requested.join(' '),
      expiresAt: new Date(Date.now() + OAUTH_ACCESS_TOKEN_TTL_SECONDS * 1000),
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = { access_token: accessToken, token_type: 'Bearer', expires_in: OAUTH_ACCESS_TOKEN_TTL_SECONDS, scope: requested.join(' ') };
  });

  return router;
}

/**
 * RFC 8414 §3: the issuer is fixed, not what a request says. The configured public address
 * (required outside development), else, in development, the local address the request arrived
 * on (a cache in front of the api must not learn endpoints from a client's Host header).
 */
function publicBaseUrl(deps: Deps, ctx: AppContext): string {
  if (deps.config.PUBLIC_BASE_URL) return deps.config.PUBLIC_BASE_URL;
  const { localAddress = '127.0.0.1', localPort } = ctx.req.socket;
  const host = isIP(localAddress) === 6 ? `[${localAddress}]` : localAddress;
  return `http://${host}:${localPort}`;
}

/** Renders OAuthError (and 401s from credential checks) in the OAuth error shape. */
function oauthErrors(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      ctx.status = error.status;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error: error.code, error_description: error.message };
    }
  };
}

async function initialAccessToken(deps: Deps, header: string) {
  const token = /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1];
  const challenge = { 'WWW-Authenticate': 'Bearer realm="gateway", error="invalid_token"' };
  if (!token) {
    throw new OAuthError(401, 'invalid_token', 'an initial access token (identity-provider bearer token) is required', { 'WWW-Authenticate': 'Bearer realm="gateway"' });
  }
  const principal = await resolveCredential(deps, token).catch(() => undefined);
  if (!principal) throw new OAuthError(401, 'invalid_token', 'the initial access token is invalid, expired or revoked', challenge);
  if (principal.method !== 'okta' || token.startsWith(OAUTH_ACCESS_TOKEN_PREFIX)) {
    throw new OAuthError(401, 'invalid_token', 'the initial access token must be an identity-provider token', challenge);
  }
  return principal;
}

async function readBody(ctx: AppContext): Promise<string> {
  const tooLarge = () => new OAuthError(413, 'invalid_request', `request body exceeds ${OAUTH_BODY_LIMIT_BYTES} bytes`);
  const encoding = encodedWith(ctx.req);
  if (encoding) throw new OAuthError(415, 'invalid_request', `Content-Encoding '${encoding}' is not supported; send the body uncompressed`);
  const bytes = await readBodyUpTo(ctx, OAUTH_BODY_LIMIT_BYTES, tooLarge, {
    minRate: { ...BODY_MIN_RATE, tooSlow: () => new OAuthError(408, 'invalid_request', 'the request body arrived too slowly; send it again') },
  });
  try {
    return decodeUtf8(bytes);
  } catch (error) {
    throw new OAuthError(400, 'invalid_request', (error as Error).message);
  }
}

function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch (error) {
    if (error instanceof JsonTextError && error.kind !== 'syntax') throw new OAuthError(400, 'invalid_client_metadata', error.message);
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  throw new OAuthError(400, 'invalid_client_metadata', 'the body must be a JSON object of client metadata');
}

/** RFC 6749 token requests are form-encoded; JSON is accepted too for convenience. */
async function readTokenRequest(ctx: AppContext): Promise<URLSearchParams> {
  const text = await readBody(ctx);
  if (ctx.is('application/x-www-form-urlencoded')) return new URLSearchParams(text);
  if (ctx.is('application/json')) {
    const params = new URLSearchParams();
    let body: unknown;
    try {
      body = parseJsonText(text);
    } catch (error) {
      throw new OAuthError(400, 'invalid_request', error instanceof JsonTextError && error.kind !== 'syntax' ? error.message : 'the body is not valid JSON');
    }
    if (body && typeof body === 'object') for (const [key, value] of Object.entries(body)) if (typeof value === 'string') params.set(key, value);
    return params;
  }
  throw new OAuthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
}

/** RFC 6749 §4.4.2 token request parameters; unknown ones are ignored (§3.2). */
const TokenRequestSchema = z.object({
  grant_type: z.string().min(1).max(64).optional(),
  scope: z.string().max(2048).optional(),
  client_id: z.string().max(256).optional(),
  client_secret: z.string().max(512).optional(),
});
type TokenRequest = z.infer<typeof TokenRequestSchema>;

function parseTokenRequest(params: URLSearchParams): TokenRequest {
  const repeated = [...new Set(params.keys())].find((key) => params.getAll(key).length > 1);
  if (repeated) throw new OAuthError(400, 'invalid_request', `parameter '${repeated}' must not be repeated`); // RFC 6749 §3.2
  const parsed = TokenRequestSchema.safeParse(Object.fromEntries(params));
  if (!parsed.success) {
    throw new OAuthError(400, 'invalid_request', firstIssue(parsed.error, 'body').text);
  }
  return parsed.data;
}

/** client_secret_basic (Authorization: Basic) or client_secret_post (body), never both (RFC 6749 §2.3.1). */
async function authenticateClient(deps: Deps, header: string, params: TokenRequest): Promise<OAuthClientRow> {
  const basic = /^Basic[ ]+(\S+)\s*$/i.exec(header)?.[1];
  let clientId: string | undefined;
  let secret: string | undefined;
  let method: 'client_secret_basic' | 'client_secret_post';
  if (basic) {
    if (params.client_secret !== undefined) throw new OAuthError(400, 'invalid_request', 'use one client authentication method, not two');
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidClient();
    try {
      clientId = decodeURIComponent(decoded.slice(0, colon));
      secret = decodeURIComponent(decoded.slice(colon + 1));
    } catch {
      throw invalidClient(); // malformed percent-encoding (RFC 6749 §2.3.1)
    }
    method = 'client_secret_basic';
  } else {
    clientId = params.client_id;
    secret = params.client_secret;
    method = 'client_secret_post';
    if (!clientId || !secret) throw invalidClient();
  }
  const id = ClientIdSchema.safeParse(clientId);
  if (!id.success) throw invalidClient();
  const client = await findOAuthClient(deps.db, id.data);
  const matches = client && timingSafeEqual(client.client_secret_hash, hashSecret(secret));
  if (!client || !matches || client.metadata.token_endpoint_auth_method !== method || client.revoked_at) throw invalidClient();
  // The tokens would be refused on every route: a revoked or suspended site's client gets none.
  if (client.site_status === 'revoked' || client.site_status === 'suspended') throw new OAuthError(400, 'unauthorized_client', `the site this client registered is ${client.site_status}`);
  return client;
}

/** Client ids are ours (`client_` + base62); anything else cannot name a client. */
const ClientIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);

/** A 401 always carries its challenge (RFC 7235 §3.1), whichever method the client tried. */
const invalidClient = () =>
  new OAuthError(401, 'invalid_client', 'client authentication failed', { 'WWW-Authenticate': 'Basic realm="gateway"' });

const withoutUndefined = (value: Record<string, unknown>) => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
