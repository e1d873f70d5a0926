-- Registered sites (content-management sites connected to the gateway) and the OAuth
-- clients / access tokens that Dynamic Client Registration (RFC 7591) issues for them.

CREATE TABLE sites (
  site_id                  text PRIMARY KEY,                 -- site_ + 22 base62, stable for the site's life
  client_id                text NOT NULL UNIQUE,             -- current client registration; changes when the site reconnects
  account_id               text NOT NULL REFERENCES accounts(id),  -- the account that first registered the client
  project_id               text REFERENCES projects(id),     -- NULL: invisible to API keys (MCP)
  site_url                 text NOT NULL,
  site_url_key             text NOT NULL,                    -- normalized site_url: one site per URL per account
  display_name             text NOT NULL,
  site_info                jsonb,
  status                   text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked', 'suspended')),
  async_execution_enabled  boolean NOT NULL DEFAULT true,    -- read by the events API (by client_id)
  primary_collection_id    text,                             -- set by the knowledge base on set_primary
  -- site_hmac_secret, encrypted: 'v1.' || base64(iv[12] || tag[16] || ciphertext) with AES-256-GCM under a
  -- key derived from GATEWAY_SECRET (HKDF-SHA256), the site_id as additional data. Never stored in clear.
  hmac_secret_encrypted    text NOT NULL,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sites_account_url UNIQUE (account_id, site_url_key)
);
CREATE INDEX sites_project_status ON sites (project_id, status, created_at) WHERE project_id IS NOT NULL;

-- Which identity-provider users have connected their CMS user account on a site
-- (MCP `cms_connection_status` for a personal key's owner, and the acting user of abilities).
CREATE TABLE site_user_connections (
  site_id      text NOT NULL REFERENCES sites(site_id) ON DELETE CASCADE,
  subject      text NOT NULL,
  cms_user     text,                                          -- the user on the site, for audit logs
  connected_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (site_id, subject)
);

-- OAuth clients registered through POST /oauth/register. Only the secret's SHA-256 is kept.
CREATE TABLE oauth_clients (
  client_id           text PRIMARY KEY,
  client_secret_hash  bytea NOT NULL,
  account_id          text NOT NULL REFERENCES accounts(id),  -- bound by the registration's initial access token
  registered_by       text NOT NULL,                          -- identity-provider subject that registered it
  metadata            jsonb NOT NULL,                         -- the client metadata as registered (RFC 7591 §2)
  created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_access_tokens (
  id          text PRIMARY KEY,
  token_hash  bytea NOT NULL UNIQUE,
  client_id   text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
  account_id  text NOT NULL REFERENCES accounts(id),
  scope       text NOT NULL,
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
