-- A site's primary collection lives in kb_site_primary_collections (written by the knowledge
-- base on set_primary, keyed by the site's client). This column was never written.
ALTER TABLE sites DROP COLUMN IF EXISTS primary_collection_id;
