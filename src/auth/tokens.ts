import { createHash, createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify, createRemoteJWKSet, decodeProtectedHeader, errors as joseErrors, type JWTVerifyGetKey } from 'jose';
import type { Config } from '../config';

/**
 * The bearer credentials other than API keys:
 * - service tokens (`sst_...`): opaque, hashed like API keys, bound to an account and a site's client_id;
 * - browser session tokens: short-lived HS256 JWTs we sign, scope `session_events`, bound to an agent
 *   and optionally a visitor (`owner_id`);
 * - identity-provider tokens: OIDC JWTs verified against the configured issuer's JWKS. Without
 *   OIDC_JWKS_URL a built-in development issuer signs with an Ed25519 key derived from GATEWAY_SECRET.
 */
export const SERVICE_TOKEN_PREFIX = 'sst_';
export const generateServiceToken = (): string => SERVICE_TOKEN_PREFIX + randomBytes(32).toString('base64url');

export const BROWSER_TOKEN_SCOPE = 'session_events';
export const BROWSER_TOKEN_MAX_TTL_SECONDS = 24 * 60 * 60;
export const BROWSER_TOKEN_DEFAULT_TTL_SECONDS = 15 * 60;

export interface BrowserTokenClaims {
  accountId: string;
  projectId: string;
  agentId: string;
  ownerId?: string;
  /**
   * The credential that minted the token, `api_key:<id>` or `service_token:<id>`: the token
   * is refused once that credential is revoked. Tokens minted before the claim existed lack it.
   */
  mintedBy?: string;
}

const derive = (secret: string, purpose: string): Buffer => createHash('sha256').update(`${purpose}:${secret}`).digest();

export async function signBrowserToken(config: Config, claims: BrowserTokenClaims, ttlSeconds = BROWSER_TOKEN_DEFAULT_TTL_SECONDS): Promise<{ token: string; expiresAt: Date }> {
  // Whole seconds, as the token's `exp` holds it: the expiry returned is the one enforced.
  const expiresAt = new Date(Math.floor((Date.now() + ttlSeconds * 1000) / 1000) * 1000);
  const token = await new SignJWT({
    scope: BROWSER_TOKEN_SCOPE,
    account_id: claims.accountId,
    project_id: claims.projectId,
    agent_id: claims.agentId,
    ...(claims.ownerId !== undefined ? { owner_id: claims.ownerId } : {}),
    ...(claims.mintedBy !== undefined ? { minted_by: claims.mintedBy } : {}),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .setAudience('browser_session')
    .sign(derive(config.GATEWAY_SECRET, 'browser-session'));
  return { token, expiresAt };
}

export async function verifyBrowserToken(config: Config, token: string): Promise<BrowserTokenClaims> {
  const { payload } = await jwtVerify(token, derive(config.GATEWAY_SECRET, 'browser-session'), {
    algorithms: ['HS256'],
    audience: 'browser_session',
  });
  if (payload.scope !== BROWSER_TOKEN_SCOPE || typeof payload.agent_id !== 'string') throw new Error('not a session token');
  return {
    accountId: String(payload.account_id),
    projectId: String(payload.project_id),
    agentId: payload.agent_id,
    ownerId: typeof payload.owner_id === 'string' ? payload.owner_id : undefined,
    mintedBy: typeof payload.minted_by === 'string' ? payload.minted_by : undefined,
  };
}

// ---- identity-provider tokens

/** Ed25519 private key from a 32-byte seed (PKCS#8 DER prefix for Ed25519). */
export function devIssuerKey(config: Config): { privateKey: KeyObject; publicKey: KeyObject } {
  const prefix = Buffer.from('302e020100300506032b657004220420', 'hex');
  const privateKey = createPrivateKey({ key: Buffer.concat([prefix, derive(config.GATEWAY_SECRET, 'dev-idp')]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

export interface IdpClaims {
  subject: string;
  accountIds: string[];
}

/** Development issuer only: mints a token the api accepts when no external JWKS is configured. */
export async function signDevIdpToken(config: Config, claims: IdpClaims, ttlSeconds = 3600): Promise<string> {
  if (config.OIDC_JWKS_URL) throw new Error('an external identity provider is configured; mint tokens there');
  return new SignJWT({ account_ids: claims.accountIds })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setSubject(claims.subject)
    .setIssuer(config.OIDC_ISSUER)
    .setAudience(config.OIDC_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(devIssuerKey(config).privateKey);
}

const remoteKeySets = new Map<string, JWTVerifyGetKey>();

/**
 * The provider's key set, fetched (and cached) by jose. A failure to fetch it is not the
 * token's fault: it becomes IdentityProviderUnavailable (retryable), while a token naming a
 * key the set does not have stays an invalid token.
 */
function remoteKeySet(url: string): JWTVerifyGetKey {
  let keySet = remoteKeySets.get(url);
  if (!keySet) {
    const fetched = createRemoteJWKSet(new URL(url));
    keySet = async (header, token) => {
      try {
        return await fetched(header, token);
      } catch (error) {
        if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) throw error;
        throw new IdentityProviderUnavailable();
      }
    };
    remoteKeySets.set(url, keySet);
  }
  return keySet;
}

const IDP_CLOCK_TOLERANCE_SECONDS = 5;

export async function verifyIdpToken(config: Config, token: string): Promise<IdpClaims> {
  const key = config.OIDC_JWKS_URL ? remoteKeySet(config.OIDC_JWKS_URL) : devIssuerKey(config).publicKey;
  // `exp` is required (OIDC makes it so; a token without one would never expire); a few seconds
  // of leeway for an identity provider whose clock runs ahead of or behind this one.
  const { payload } = await jwtVerify(token, key as KeyObject, { issuer: config.OIDC_ISSUER, audience: config.OIDC_AUDIENCE, requiredClaims: ['exp'], clockTolerance: IDP_CLOCK_TOLERANCE_SECONDS });
  const accountIds = Array.isArray(payload.account_ids) ? payload.account_ids.map(String) : [];
  if (!payload.sub) throw new joseErrors.JWTClaimValidationFailed('token has no subject', payload, 'sub', 'missing');
  return { subject: payload.sub, accountIds };
}

/** The identity provider's signing keys could not be fetched (not the token's fault: retryable). */
export class IdentityProviderUnavailable extends Error {
  constructor() {
    super("the identity provider's signing keys could not be fetched");
    this.name = 'IdentityProviderUnavailable';
  }
}

export function jwtAlgorithm(token: string): string | undefined {
  try {
    return decodeProtectedHeader(token).alg;
  } catch {
    return undefined;
  }
}
