-- +goose Up
-- Scheduled jobs (sessions.Jobs, issue 24): one row per job, the whole
-- job as JSON in body, the columns the scheduler selects on beside it.
-- A scheduler claims due jobs with one UPDATE over a SELECT ... FOR UPDATE
-- SKIP LOCKED (claim_owner, claim_until): replicas polling at once take
-- disjoint sets, and a claim whose holder died runs out at claim_until.
CREATE TABLE jobs (
    id          text        COLLATE "C" PRIMARY KEY,
    agent_id    text        NOT NULL,
    session_key text        NOT NULL,
    chat_key    text        NOT NULL,
    state       text        NOT NULL,
    next_at     timestamptz NOT NULL,
    claim_owner text        NOT NULL DEFAULT '',
    claim_until timestamptz,
    body        jsonb       NOT NULL
);
CREATE INDEX jobs_due ON jobs (next_at, id) WHERE state = 'active';
CREATE INDEX jobs_chat ON jobs (chat_key);
CREATE INDEX jobs_claimed ON jobs (claim_until) WHERE claim_owner <> '';

-- +goose Down
DROP TABLE jobs;
