-- Which account first registered each site client. A site that reconnects moves to a new
-- client_id, so `sites.client_id` forgets its earlier clients; this table keeps the binding,
-- so another account presenting an earlier client still gets 409 (POST /v1/sites).
CREATE TABLE site_clients (
  client_id      text PRIMARY KEY,
  account_id     text NOT NULL REFERENCES accounts(id),
  registered_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO site_clients (client_id, account_id, registered_at)
  SELECT client_id, account_id, created_at FROM sites
  ON CONFLICT (client_id) DO NOTHING;
