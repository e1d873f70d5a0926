-- An operator can revoke an OAuth client (admin `oauth revoke-client`): its secret no longer
-- gets tokens, and the tokens it holds stop working.
ALTER TABLE oauth_clients ADD COLUMN IF NOT EXISTS revoked_at timestamptz;
