import type { Deps } from '../deps';
import { ApiError, forbidden, serviceUnavailable } from '../api/errors';
import type { Middleware } from '../api/types';
import { findServiceTokenByHash, findServiceTokenById } from '../store/service-tokens';
import { isApiKeyActive } from '../store/api-keys';
import { findOAuthAccessTokenByHash } from '../store/oauth';
import { ACCESS_TOKEN_PATTERN, OAUTH_ACCESS_TOKEN_PREFIX } from '../domain/oauth';
import { hashSecret, isWellFormedApiKey, API_KEY_PREFIX } from './api-keys';
import { apiKeyCacheFor } from './api-key-cache';
import type { Principal } from './principal';
import { hasAccess, type Scope } from './scopes';
import { IdentityProviderUnavailable, SERVICE_TOKEN_PREFIX, jwtAlgorithm, verifyBrowserToken, verifyIdpToken } from './tokens';

/** `oauth`: access tokens from the OAuth token endpoint (site plugins, POST /v1/sites only). */
export type CredentialKind = 'api_key' | 'service_token' | 'browser_session' | 'okta' | 'oauth';

export interface AuthRequirement {
  /** Scope an API key needs, at `access` (read for GET, write otherwise). */
  scope?: Scope;
  access?: 'read' | 'write';
  /** Credential kinds the route accepts; API keys and site service tokens by default. */
  accept?: CredentialKind[];
  /** `x-api-key` as an alternative header (POST /v1/messages only). */
  allowXApiKey?: boolean;
  /**
   * Metered routes: the credential must be bound to a project, whose credits pay. Refused
   * here (403), before the body is read, rather than after it was parsed and validated.
   */
  billsProject?: boolean;
}

export const REALM = 'gateway';

export const missingCredential = () =>
  new ApiError(401, 'authentication_error', 'missing bearer token in the Authorization header', {
    headers: { 'WWW-Authenticate': `Bearer realm="${REALM}"` },
  });

export const invalidToken = () =>
  new ApiError(401, 'invalid_token', 'the access token is invalid, malformed or revoked', {
    headers: { 'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
  });

export function bearerFrom(header: string): string | undefined {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** A site's credential (service token or OAuth access token): the site's account and client. */
interface SiteCredential {
  id: string;
  account_id: string;
  client_id: string;
  revoked_at: Date | null;
  site_status: string | null;
}

/**
 * Why a site's credential (service token, OAuth token) may not act, if it may not: revoked
 * itself, or speaking for a site that is revoked or suspended (its earlier clients included).
 */
function siteCredentialRefusal(record: SiteCredential): 'revoked' | 'suspended' | undefined {
  if (record.revoked_at || record.site_status === 'revoked') return 'revoked';
  return record.site_status === 'suspended' ? 'suspended' : undefined;
}

/** A revoked credential or site is no longer valid (401); a suspended site's is refused (403) until activated again. */
function sitePrincipal(record: SiteCredential): Principal {
  const refusal = siteCredentialRefusal(record);
  if (refusal === 'revoked') throw invalidToken();
  if (refusal === 'suspended') throw forbidden('the site this credential speaks for is suspended');
  return { method: 'service_token', actorType: 'service', accountId: record.account_id, clientId: record.client_id, keyId: record.id };
}

/** A browser token lives no longer than the API key or service token that minted it. */
async function minterActive(deps: Deps, mintedBy: string | undefined): Promise<boolean> {
  if (mintedBy === undefined) return true; // minted before tokens named their minter; they expire within 24 h
  const [kind, id] = mintedBy.split(':', 2) as [string, string | undefined];
  if (!id) return false;
  if (kind === 'api_key') return isApiKeyActive(deps.db, id);
  if (kind === 'service_token') {
    const record = await findServiceTokenById(deps.db, id);
    return record !== undefined && siteCredentialRefusal(record) === undefined;
  }
  return false;
}

/**
 * What a presented credential counts as for per-credential limits: the credential itself, or for
 * a JWT its signed part (header and claims). The same token re-encoded (a signature whose unused
 * base64url bits differ) is accepted as the same token, so it must not count as another one.
 */
export function credentialIdentity(credential: string): string {
  const parts = credential.split('.');
  return parts.length === 3 ? `jwt:${parts[0]}.${parts[1]}` : credential;
}

/** Resolves a presented credential to a principal, or throws 401 `invalid_token`. */
export async function resolveCredential(deps: Deps, token: string): Promise<Principal> {
  if (token.startsWith(API_KEY_PREFIX)) {
    // Malformed keys are refused before any database lookup.
    if (!isWellFormedApiKey(token)) throw invalidToken();
    // Cached per process and invalidated by revocation NOTIFYs: see api-key-cache.ts.
    const keys = apiKeyCacheFor(deps.db, deps.config.DATABASE_URL, deps.logger);
    const key = await keys.lookup(hashSecret(token));
    if (!key || key.revoked_at) throw invalidToken();
    keys.touch(key.id);
    return {
      method: 'api_key',
      actorType: key.owner_subject ? 'authenticated' : 'service',
      accountId: key.account_id,
      projectId: key.project_id,
      keyId: key.id,
      scopes: key.scopes,
      subject: key.owner_subject ?? undefined,
      keyType: key.key_type,
    };
  }
  if (token.startsWith(SERVICE_TOKEN_PREFIX)) {
    const record = /^sst_[A-Za-z0-9_-]{43}$/.test(token) ? await findServiceTokenByHash(deps.db, hashSecret(token)) : undefined;
    if (!record) throw invalidToken();
    return sitePrincipal(record);
  }
  if (token.startsWith(OAUTH_ACCESS_TOKEN_PREFIX)) {
    // A site client's OAuth token speaks for the site like a service token does (and is
    // recorded as such in usage), but routes must opt in to the `oauth` kind.
    const record = ACCESS_TOKEN_PATTERN.test(token) ? await findOAuthAccessTokenByHash(deps.db, hashSecret(token)) : undefined;
    if (!record || record.expires_at.getTime() <= Date.now()) throw invalidToken();
    return sitePrincipal(record);
  }
  const algorithm = jwtAlgorithm(token);
  if (algorithm === 'HS256') {
    const claims = await verifyBrowserToken(deps.config, token).catch(() => undefined);
    if (!claims || !(await minterActive(deps, claims.mintedBy))) throw invalidToken();
    return {
      method: 'browser_session',
      actorType: claims.ownerId ? 'authenticated' : 'anonymous',
      accountId: claims.accountId,
      projectId: claims.projectId,
      agentId: claims.agentId,
      ownerId: claims.ownerId,
    };
  }
  if (algorithm) {
    const claims = await verifyIdpToken(deps.config, token).catch((error) => {
      if (error instanceof IdentityProviderUnavailable) throw serviceUnavailable(error.message);
      return undefined;
    });
    if (!claims) throw invalidToken();
    // A valid token that grants no account has no permission here (403), not a bad credential.
    if (claims.accountIds.length === 0) throw forbidden('the identity-provider token grants access to no account');
    return { method: 'okta', actorType: 'authenticated', accountId: claims.accountIds[0]!, accountIds: claims.accountIds, subject: claims.subject };
  }
  throw invalidToken();
}

const KIND_LABEL: Record<CredentialKind, string> = {
  api_key: 'API key',
  service_token: 'service token',
  browser_session: 'browser session token',
  okta: 'identity-provider token',
  oauth: 'OAuth access token',
};

/** The kind of credential presented: the principal's method, except OAuth tokens are their own kind. */
const credentialKind = (token: string, principal: Principal): CredentialKind =>
  token.startsWith(OAUTH_ACCESS_TOKEN_PREFIX) ? 'oauth' : (principal.method as CredentialKind);

/**
 * Authenticates the request and authorizes its credential kind and scope. Sets
 * `ctx.state.principal`. 401 (with WWW-Authenticate) when the credential is missing or
 * invalid; 403 `permission_error` naming what is missing when it is valid but not enough.
 */
export function authenticate(deps: Deps, requirement: AuthRequirement = {}): Middleware {
  const accept = requirement.accept ?? ['api_key', 'service_token'];
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    let token = header ? bearerFrom(header) : undefined;
    if (header && !token) throw invalidToken();
    if (!token && requirement.allowXApiKey) token = ctx.get('x-api-key') || undefined;
    if (!token) throw missingCredential();

    const principal = await resolveCredential(deps, token);
    const kind = credentialKind(token, principal);
    if (!accept.includes(kind)) {
      throw forbidden(`this endpoint does not accept credentials of this kind (${KIND_LABEL[kind] ?? kind})`);
    }
    if (requirement.scope) {
      const access = requirement.access ?? (ctx.method === 'GET' || ctx.method === 'HEAD' ? 'read' : 'write');
      if (!hasAccess(principal, requirement.scope, access)) {
        throw forbidden(`the API key lacks the '${requirement.scope}:${access}' scope`);
      }
    }
    if (requirement.billsProject && !principal.projectId) throw forbidden('this credential is not bound to a project');
    ctx.state.principal = principal;
    await next();
  };
}
