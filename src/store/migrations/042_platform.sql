-- The platform API (separate app, HTTP Basic): hosting accounts, their sites and installs,
-- and headless applications with environments, uploads, builds and domain mappings.
-- Platform ids are UUIDs, as the platform API's paths and fields require.

CREATE TABLE platform_users (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  username       text NOT NULL UNIQUE,
  password_hash  text NOT NULL,             -- scrypt$N$r$p$salt$hash (base64), never the password
  created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE platform_accounts (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Which accounts a platform user may act on.
CREATE TABLE platform_user_accounts (
  user_id     uuid NOT NULL REFERENCES platform_users(id) ON DELETE CASCADE,
  account_id  uuid NOT NULL REFERENCES platform_accounts(id) ON DELETE CASCADE,
  PRIMARY KEY (user_id, account_id)
);

CREATE TABLE platform_sites (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id    uuid NOT NULL REFERENCES platform_accounts(id),
  name          text NOT NULL,
  group_name    text,
  tags          text[] NOT NULL DEFAULT '{}',
  sandbox       boolean NOT NULL DEFAULT false,
  transferable  boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX platform_sites_account ON platform_sites (account_id, created_at, id);

CREATE TABLE platform_installs (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  site_id       uuid NOT NULL REFERENCES platform_sites(id) ON DELETE CASCADE,
  name          text NOT NULL,
  environment   text CHECK (environment IN ('production', 'staging', 'development')),
  cname         text NOT NULL,
  php_version   text,
  is_multisite  boolean,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX platform_installs_site ON platform_installs (site_id, created_at);

-- Headless applications.
CREATE TABLE platform_apps (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id  uuid NOT NULL REFERENCES platform_accounts(id),
  name        text NOT NULL,
  repository  text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, name)
);

CREATE TABLE platform_environments (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  app_id            uuid NOT NULL REFERENCES platform_apps(id) ON DELETE CASCADE,
  name              text NOT NULL,
  branch            text,
  variables         jsonb NOT NULL DEFAULT '{}'::jsonb,
  cache_cleared_at  timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (app_id, name)
);

-- Uploaded source archives (zip), kept in Postgres.
CREATE TABLE platform_uploads (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  environment_id  uuid NOT NULL REFERENCES platform_environments(id) ON DELETE CASCADE,
  size_bytes      bigint NOT NULL,
  sha256          text NOT NULL,
  content         bytea NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE platform_builds (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  environment_id  uuid NOT NULL REFERENCES platform_environments(id) ON DELETE CASCADE,
  upload_id       uuid REFERENCES platform_uploads(id) ON DELETE SET NULL,
  status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);
CREATE INDEX platform_builds_environment ON platform_builds (environment_id, created_at DESC);

CREATE TABLE platform_domain_mappings (
  environment_id       uuid NOT NULL REFERENCES platform_environments(id) ON DELETE CASCADE,
  domain               text NOT NULL,
  is_primary           boolean NOT NULL DEFAULT false,
  verification_status  text NOT NULL DEFAULT 'pending' CHECK (verification_status IN ('pending', 'verified', 'failed')),
  txt_record           text NOT NULL,          -- value the owner publishes at _platform-verify.<domain>
  checked_at           timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, domain)
);
CREATE UNIQUE INDEX platform_domain_mappings_one_primary ON platform_domain_mappings (environment_id) WHERE is_primary;
