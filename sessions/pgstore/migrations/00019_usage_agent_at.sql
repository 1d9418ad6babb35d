-- +goose Up
-- One index fewer to update per usage row (issue 21: each turn inserts a
-- row, which updated six indexes). usage_agent_at (agent_id, at) served
-- no query better than another index: with 1,000,000 rows, EXPLAIN
-- ANALYZE chose usage_at for an agent's time range (filtering the agent)
-- with or without it, and an agent's rows at any time (Refs, the rebuild)
-- are found as fast by the unique index (agent_id, session_id, at), whose
-- first column is the agent; Rows' order (agent_id, at, id) is an
-- incremental sort over usage_at. Same plans and buffers read after.
DROP INDEX usage_agent_at;

-- +goose Down
CREATE INDEX usage_agent_at ON usage (agent_id, at);
