-- Usage rollups for GET /v1/analytics, maintained by a trigger on usage_records so no
-- writer can forget them and no row is ever missed. Three grains (10 minutes, 1 hour,
-- 1 day, all aligned to UTC epoch multiples) let a query read the coarsest rows that
-- fit the window: a 30-day daily query sums ~30 rows per group instead of 4,320.
-- Each grain is keyed by every dimension analytics can group or filter by; a second,
-- narrow set keyed by model and operation only serves the default query (group_by
-- model,operation without filters) from a few rows per bucket however many sites,
-- auth methods and applications the project has.

CREATE TABLE usage_rollup_10m (
  project_id     text NOT NULL,
  bucket_start   timestamptz NOT NULL,
  model          text NOT NULL,
  operation      text NOT NULL,
  client_id      text NOT NULL,
  auth_method    text NOT NULL,
  actor_type     text NOT NULL,
  application    text NOT NULL,
  credits_nano   bigint NOT NULL,
  request_count  bigint NOT NULL,
  PRIMARY KEY (project_id, bucket_start, model, operation, client_id, auth_method, actor_type, application)
);
CREATE TABLE usage_rollup_1h (LIKE usage_rollup_10m INCLUDING ALL);
CREATE TABLE usage_rollup_1d (LIKE usage_rollup_10m INCLUDING ALL);

CREATE TABLE usage_rollup_mo_10m (
  project_id     text NOT NULL,
  bucket_start   timestamptz NOT NULL,
  model          text NOT NULL,
  operation      text NOT NULL,
  credits_nano   bigint NOT NULL,
  request_count  bigint NOT NULL,
  PRIMARY KEY (project_id, bucket_start, model, operation)
);
CREATE TABLE usage_rollup_mo_1h (LIKE usage_rollup_mo_10m INCLUDING ALL);
CREATE TABLE usage_rollup_mo_1d (LIKE usage_rollup_mo_10m INCLUDING ALL);

-- Statement-level with a transition table: a multi-row INSERT (bulk loads, backfills)
-- becomes one aggregated upsert per grain instead of one per row. Rows are upserted in key
-- order so concurrent statements take row locks in the same order (no deadlocks).
CREATE FUNCTION usage_rollup_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_rollup_10m AS r
    SELECT project_id, date_bin('10 minutes', created_at, TIMESTAMPTZ 'epoch') AS bucket_start, model, operation, client_id,
           auth_method, actor_type, application, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
  ON CONFLICT (project_id, bucket_start, model, operation, client_id, auth_method, actor_type, application)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;

  INSERT INTO usage_rollup_1h AS r
    SELECT project_id, date_bin('1 hour', created_at, TIMESTAMPTZ 'epoch'), model, operation, client_id,
           auth_method, actor_type, application, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
  ON CONFLICT (project_id, bucket_start, model, operation, client_id, auth_method, actor_type, application)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;

  INSERT INTO usage_rollup_1d AS r
    SELECT project_id, date_bin('1 day', created_at, TIMESTAMPTZ 'epoch'), model, operation, client_id,
           auth_method, actor_type, application, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
  ON CONFLICT (project_id, bucket_start, model, operation, client_id, auth_method, actor_type, application)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;
  INSERT INTO usage_rollup_mo_10m AS r
    SELECT project_id, date_bin('10 minutes', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (project_id, bucket_start, model, operation)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;

  INSERT INTO usage_rollup_mo_1h AS r
    SELECT project_id, date_bin('1 hour', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (project_id, bucket_start, model, operation)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;

  INSERT INTO usage_rollup_mo_1d AS r
    SELECT project_id, date_bin('1 day', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
      FROM new_usage GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (project_id, bucket_start, model, operation)
  DO UPDATE SET credits_nano = r.credits_nano + EXCLUDED.credits_nano, request_count = r.request_count + EXCLUDED.request_count;
  RETURN NULL;
END
$$;

CREATE TRIGGER usage_records_rollup
  AFTER INSERT ON usage_records
  REFERENCING NEW TABLE AS new_usage
  FOR EACH STATEMENT EXECUTE FUNCTION usage_rollup_after_insert();

-- Rows written before this migration.
INSERT INTO usage_rollup_10m
  SELECT project_id, date_bin('10 minutes', created_at, TIMESTAMPTZ 'epoch'), model, operation, client_id, auth_method, actor_type, application, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO usage_rollup_1h
  SELECT project_id, date_bin('1 hour', created_at, TIMESTAMPTZ 'epoch'), model, operation, client_id, auth_method, actor_type, application, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO usage_rollup_1d
  SELECT project_id, date_bin('1 day', created_at, TIMESTAMPTZ 'epoch'), model, operation, client_id, auth_method, actor_type, application, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO usage_rollup_mo_10m
  SELECT project_id, date_bin('10 minutes', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4;
INSERT INTO usage_rollup_mo_1h
  SELECT project_id, date_bin('1 hour', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4;
INSERT INTO usage_rollup_mo_1d
  SELECT project_id, date_bin('1 day', created_at, TIMESTAMPTZ 'epoch'), model, operation, sum(credits_nano), count(*)
    FROM usage_records GROUP BY 1, 2, 3, 4;
