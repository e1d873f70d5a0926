-- A deleted session's workflow ends at its next claim (the delete signals it); the claim records
-- that here. The worker's reconciler re-signals deleted sessions whose workflow has not ended
-- (the delete's signal was lost, or the session was deleted before workflows ended on deletion).
ALTER TABLE sessions ADD COLUMN workflow_ended_at timestamptz;
CREATE INDEX sessions_deleted_workflow_running ON sessions (deleted_at) WHERE deleted_at IS NOT NULL AND workflow_ended_at IS NULL;
