-- Which site each client registered: a site that reconnects moves to a new client_id, but the
-- credentials of its earlier clients still speak for it, so they follow its status (a revoked
-- site's old client tokens are refused too). Backfilled from each site's current client; the
-- earlier clients of sites that reconnected before this migration are not known.
ALTER TABLE site_clients ADD COLUMN site_id text REFERENCES sites(site_id);
UPDATE site_clients c SET site_id = s.site_id FROM sites s WHERE s.client_id = c.client_id;
