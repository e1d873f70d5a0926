-- An agent's open objects (tools and their JSON Schemas, skills, MCP servers, settings, metadata)
-- are stored as written: jsonb sorts object keys, and the order of a tool schema's properties is
-- the order providers generate arguments in. These columns are only ever read whole. (Existing
-- rows keep the order jsonb gave them.)
ALTER TABLE agents
  ALTER COLUMN settings TYPE json USING settings::json,
  ALTER COLUMN mcp_servers TYPE json USING mcp_servers::json,
  ALTER COLUMN tools TYPE json USING tools::json,
  ALTER COLUMN skills TYPE json USING skills::json,
  ALTER COLUMN metadata TYPE json USING metadata::json;
