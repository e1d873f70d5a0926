-- The sessions of a project with a run in flight: each model turn sums what the project's other
-- runs have used and not yet been billed for (activities/run-context.ts), so concurrent runs
-- cannot each spend the whole balance.
CREATE INDEX sessions_project_active_run ON sessions (project_id) WHERE active_run_id IS NOT NULL;
-- The usage-bearing and closing events of a run, found without reading the session's other events.
CREATE INDEX session_events_run_usage ON session_events (session_id, run_id, seq)
  WHERE type IN ('session.turn_usage', 'session.compaction', 'session.status_idle', 'session.error');
