-- The sessions of a project with a run in flight: each model turn sums what the project's other
-- runs have used and not yet been billed for (activities/run-context.ts), so concurrent runs
-- cannot each spend the whole balance.
CREATE INDEX sessions_project_active_run ON sessions (project_id) WHERE active_run_id IS NOT NULL;
