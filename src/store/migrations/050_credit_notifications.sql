-- api processes keep a per-process note of which projects have a positive balance, so a
-- metered request needs no balance read (src/billing/admission.ts). Every change that moves
-- a balance across zero, by any writer (api debits, agent-run debits, admin grants), is
-- announced here, in the writing transaction: listeners drop their note when it commits.
-- The WHEN clauses are evaluated without calling the function, so an ordinary debit that
-- leaves the balance positive costs nothing extra.
CREATE FUNCTION project_credits_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('project_credits_changed', NEW.project_id);
  RETURN NULL;
END
$$;

CREATE TRIGGER project_credits_crossed_zero
  AFTER UPDATE OF balance_nano ON project_credits
  FOR EACH ROW WHEN ((OLD.balance_nano > 0) IS DISTINCT FROM (NEW.balance_nano > 0))
  EXECUTE FUNCTION project_credits_notify();

CREATE TRIGGER project_credits_created
  AFTER INSERT ON project_credits
  FOR EACH ROW EXECUTE FUNCTION project_credits_notify();
