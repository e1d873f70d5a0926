-- Model calls of a run whose stream broke (or was cancelled) after the model produced output:
-- the provider bills them, so the run's closing charge includes them. The failing attempt
-- writes its row; the run's close adds the rows to its usage and deletes them, in one transaction.
CREATE TABLE run_attempt_usage (
  key         text PRIMARY KEY,                 -- <run_id>:turn:<n>:attempt:<k>
  run_id      text NOT NULL,
  usage       jsonb NOT NULL,                   -- a priced run usage (RunUsage, with its model share)
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_attempt_usage_run ON run_attempt_usage (run_id);
