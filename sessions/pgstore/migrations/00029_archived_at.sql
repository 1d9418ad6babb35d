-- +goose Up
-- Maintenance forgets an agent's archives past archiveRetention
-- (expireArchives: agent_id = $1 AND archived_at < $2). The only index
-- led by agent_id went on by session key (archived_by_key), so each run
-- read every archive the agent kept to find the few that aged out: the
-- cost grew with the bot's age, not with what it removed. This one reads
-- the aged ones only. Building it holds archive writes (resets, deletes)
-- for as long as it takes, once, at the upgrade.
CREATE INDEX archived_expiry ON archived (agent_id, archived_at);

-- +goose Down
DROP INDEX archived_expiry;
