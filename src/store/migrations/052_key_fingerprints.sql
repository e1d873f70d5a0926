-- Listings showed the first characters of each key's secret; they now show a fingerprint of
-- its SHA-256 instead (src/auth/api-keys.ts displayPrefix), so no part of a secret is stored.
UPDATE api_keys SET display_prefix = 'svc_…' || left(encode(key_hash, 'hex'), 8);
