-- Agents, sessions and the session event log.
CREATE TABLE agents (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id),
  version          integer NOT NULL DEFAULT 1,       -- bumped on every update; the ETag for If-Match
  name             text NOT NULL,
  model            text NOT NULL,
  description      text,
  system_prompt    text,
  temperature      double precision,
  max_tokens       integer,
  reasoning_effort text,
  scopes           jsonb,
  settings         jsonb,
  mcp_servers      jsonb,
  tools            jsonb,
  skills           jsonb,
  metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz,
  deleted_at       timestamptz
);
CREATE INDEX agents_project ON agents (project_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE sessions (
  id                           text PRIMARY KEY,
  project_id                   text NOT NULL REFERENCES projects(id),
  agent_id                     text NOT NULL REFERENCES agents(id),
  status                       text NOT NULL DEFAULT 'idle'
                               CHECK (status IN ('idle', 'running', 'rescheduling', 'terminated', 'error')),
  title                        text,
  reasoning_effort             text,
  metadata                     jsonb NOT NULL DEFAULT '{}'::jsonb,
  owner_id                     text,
  client_id                    text,            -- the site the session was created through, for usage rows
  -- run state, changed only under the session row lock:
  active_run_id                text,            -- non-null while a run holds the session
  pending_tool_use_ids         jsonb NOT NULL DEFAULT '[]'::jsonb,  -- client tool calls the paused run waits for
  cancelled_tool_use_ids       jsonb NOT NULL DEFAULT '[]'::jsonb,  -- calls answered by a synthetic `cancelled` result
  event_seq                    bigint NOT NULL DEFAULT 0,            -- last assigned per-session sequence
  last_event_at                timestamptz,     -- keeps created_at monotonic within a session
  -- cumulative usage
  input_tokens                 bigint NOT NULL DEFAULT 0,
  output_tokens                bigint NOT NULL DEFAULT 0,
  cache_read_input_tokens      bigint NOT NULL DEFAULT 0,
  cache_creation_input_tokens  bigint NOT NULL DEFAULT 0,
  credits_nano                 bigint NOT NULL DEFAULT 0,
  archived_at                  timestamptz,
  deleted_at                   timestamptz,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  updated_at                   timestamptz
);
CREATE INDEX sessions_project ON sessions (project_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX sessions_agent ON sessions (agent_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX sessions_metadata ON sessions USING gin (metadata);

-- The ordered event log: (created_at, seq) orders a session's events; ids are opaque.
CREATE TABLE session_events (
  id               text PRIMARY KEY,
  session_id       text NOT NULL REFERENCES sessions(id),
  seq              bigint NOT NULL,
  type             text NOT NULL,
  content          jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- top-level members beyond content (stop_reason, context_tokens, tool_use_ids, tool_traceparents, status ...)
  attributes       jsonb NOT NULL DEFAULT '{}'::jsonb,
  usage            jsonb,           -- only session.status_idle and session.error
  error_code       text,
  run_id           text,            -- the run that produced (or consumed) the event
  idempotency_key  text,            -- activity appends: a retried activity never duplicates an event
  processed_at     timestamptz,
  created_at       timestamptz NOT NULL,
  UNIQUE (session_id, seq)
);
CREATE INDEX session_events_order ON session_events (session_id, created_at, seq);
CREATE UNIQUE INDEX session_events_idempotency ON session_events (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The reconciler looks for run-starting events nobody processed.
CREATE INDEX session_events_unprocessed ON session_events (created_at) WHERE processed_at IS NULL AND type IN ('user.message', 'user.tool_result', 'system.message');
