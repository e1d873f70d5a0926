import { z } from 'zod';

/**
 * OAuth 2.0 for site plugins: Dynamic Client Registration (RFC 7591) and the
 * client-credentials grant (RFC 6749 §4.4). The one scope a site client gets lets it
 * register its site (POST /v1/sites); access tokens are opaque `oat_` strings.
 */
export const OAUTH_SCOPE_SITES = 'sites:register';
export const OAUTH_SCOPES = [OAUTH_SCOPE_SITES] as const;
export const OAUTH_ACCESS_TOKEN_PREFIX = 'oat_';
export const OAUTH_ACCESS_TOKEN_TTL_SECONDS = 3600;
export const OAUTH_GRANT_TYPES = ['client_credentials'] as const;
export const OAUTH_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;
export const OAUTH_BODY_LIMIT_BYTES = 16 * 1024;

export const ACCESS_TOKEN_PATTERN = /^oat_[A-Za-z0-9_-]{43}$/;

/**
 * Error codes of RFC 7591 §3.2.2, RFC 6749 §5.2 and RFC 6750 §3.1 (the initial access token),
 * rendered as `{error, error_description}`.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_client_metadata'
  | 'invalid_redirect_uri'
  | 'invalid_token'
  | 'insufficient_scope';

export class OAuthError extends Error {
  constructor(readonly status: number, readonly code: OAuthErrorCode, description: string, readonly headers: Record<string, string> = {}) {
    super(description);
  }
}

const uri = z.string().max(2048).refine((v) => URL.canParse(v), 'must be an absolute URI');

/**
 * Client metadata (RFC 7591 §2). Unknown members are ignored, as the RFC requires of
 * servers. `account_id` is our extension: the account the client acts for, needed only
 * when the registering user belongs to several.
 */
export const ClientMetadataSchema = z.object({
  client_name: z.string().min(1).max(255).optional(),
  client_uri: uri.optional(),
  redirect_uris: z.array(uri).max(20).optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  token_endpoint_auth_method: z.string().optional(),
  scope: z.string().max(1024).optional(),
  software_id: z.string().max(255).optional(),
  software_version: z.string().max(255).optional(),
  account_id: z.string().min(1).max(64).optional(),
});
export type ClientMetadata = z.infer<typeof ClientMetadataSchema>;

/** Checks the metadata we restrict; returns the normalized registration or throws invalid_client_metadata. */
export function normalizeClientMetadata(input: ClientMetadata) {
  const grantTypes = input.grant_types ?? ['client_credentials'];
  const unsupported = grantTypes.filter((g) => !(OAUTH_GRANT_TYPES as readonly string[]).includes(g));
  if (unsupported.length > 0) throw new OAuthError(400, 'invalid_client_metadata', `unsupported grant_types: ${unsupported.join(', ')} (supported: client_credentials)`);
  if (input.response_types && input.response_types.length > 0) {
    throw new OAuthError(400, 'invalid_client_metadata', 'response_types must be empty: only the client_credentials grant is supported');
  }
  const authMethod = input.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!(OAUTH_AUTH_METHODS as readonly string[]).includes(authMethod)) {
    throw new OAuthError(400, 'invalid_client_metadata', `unsupported token_endpoint_auth_method (supported: ${OAUTH_AUTH_METHODS.join(', ')})`);
  }
  const scope = parseScope(input.scope) ?? [OAUTH_SCOPE_SITES];
  for (const redirect of input.redirect_uris ?? []) {
    const protocol = new URL(redirect).protocol;
    if (protocol !== 'https:' && protocol !== 'http:') throw new OAuthError(400, 'invalid_redirect_uri', `redirect_uri must be http(s): ${redirect}`);
  }
  return {
    client_name: input.client_name,
    client_uri: input.client_uri,
    redirect_uris: input.redirect_uris,
    grant_types: grantTypes,
    token_endpoint_auth_method: authMethod,
    scope: scope.join(' '),
    software_id: input.software_id,
    software_version: input.software_version,
  };
}

/** Space-separated scope list; every scope must be one we know (RFC 6749 §3.3). */
export function parseScope(scope: string | undefined): string[] | undefined {
  if (scope === undefined || scope.trim() === '') return undefined;
  const scopes = [...new Set(scope.trim().split(/\s+/))];
  const unknown = scopes.filter((s) => !(OAUTH_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new OAuthError(400, 'invalid_scope', `unknown scope: ${unknown.join(' ')}`);
  return scopes;
}
