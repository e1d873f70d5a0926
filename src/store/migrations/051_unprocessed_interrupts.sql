-- The reconciler re-sends interrupts whose run still holds the session (their signal may have
-- been lost): it looks for unprocessed user.interrupt events every pass, so they get their own
-- small partial index (a run that starts later marks them processed).
CREATE INDEX session_events_unprocessed_interrupts ON session_events (session_id) WHERE processed_at IS NULL AND type = 'user.interrupt';
