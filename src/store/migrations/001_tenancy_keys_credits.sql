-- Tenancy: accounts own projects; every resource belongs to a project.
CREATE TABLE accounts (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id          text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts(id),
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_account ON projects (account_id);

-- API keys: only the SHA-256 of the secret is stored; lookup is by that hash.
CREATE TABLE api_keys (
  id             text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects(id),
  key_hash       bytea NOT NULL UNIQUE,
  display_prefix text NOT NULL,            -- first characters, to tell keys apart in listings
  preset         text NOT NULL CHECK (preset IN ('all', 'read_only', 'restricted')),
  scopes         jsonb NOT NULL DEFAULT '{}'::jsonb,  -- restricted: scope -> none|read|write
  key_type       text NOT NULL DEFAULT 'standard' CHECK (key_type IN ('standard', 'personal', 'project')),
  owner_subject  text,
  name           text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  revoked_at     timestamptz,
  last_used_at   timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id);

-- Service tokens authenticate a site (registered client) of an account.
CREATE TABLE service_tokens (
  id          text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts(id),
  client_id   text NOT NULL,
  token_hash  bytea NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

-- Credits: the balance row is the hot path (one row update per debit); the ledger is the audit trail.
CREATE TABLE project_credits (
  project_id    text PRIMARY KEY REFERENCES projects(id),
  balance_nano  bigint NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE credit_ledger (
  id          bigserial PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  kind        text NOT NULL CHECK (kind IN ('grant', 'debit')),
  delta_nano  bigint NOT NULL,             -- positive for grants, negative for debits
  reference   text,                        -- request id or run id
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credit_ledger_project ON credit_ledger (project_id, created_at);

-- One row per metered call; analytics reads these (and their rollup).
CREATE TABLE usage_records (
  id                           bigserial PRIMARY KEY,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  project_id                   text NOT NULL,
  key_id                       text,
  model                        text NOT NULL,
  operation                    text NOT NULL,
  client_id                    text NOT NULL DEFAULT '',
  auth_method                  text NOT NULL DEFAULT 'unknown',
  actor_type                   text NOT NULL DEFAULT 'unknown',
  application                  text NOT NULL DEFAULT 'unknown',
  input_tokens                 bigint NOT NULL DEFAULT 0,
  output_tokens                bigint NOT NULL DEFAULT 0,
  cache_read_input_tokens      bigint NOT NULL DEFAULT 0,
  cache_creation_input_tokens  bigint NOT NULL DEFAULT 0,
  reasoning_tokens             bigint NOT NULL DEFAULT 0,
  credits_nano                 bigint NOT NULL DEFAULT 0,
  request_id                   text
);
CREATE INDEX usage_records_project_time ON usage_records (project_id, created_at);
