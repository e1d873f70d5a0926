-- Knowledge-base collections. Documents live in Elasticsearch (routing = collection id);
-- this row is the authority on whether a collection exists and which project owns it.
CREATE TABLE kb_collections (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects(id),
  name         text NOT NULL,              -- stored trimmed
  description  text,
  metadata     jsonb,                      -- NULL when unset (omitted in responses)
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT kb_collections_project_name UNIQUE (project_id, name)
);
-- Listing is keyset-paginated by (created_at, id) within a project.
CREATE INDEX kb_collections_project_created ON kb_collections (project_id, created_at, id);

-- A site's primary collection (set by `set_primary` on create with a site-authenticated caller).
CREATE TABLE kb_site_primary_collections (
  client_id      text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects(id),
  collection_id  text NOT NULL REFERENCES kb_collections(id) ON DELETE CASCADE,
  updated_at     timestamptz NOT NULL DEFAULT now()
);
