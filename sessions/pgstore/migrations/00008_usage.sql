-- +goose Up
-- The usage ledger (issue 14): one row per agent turn with its tokens and
-- cost (sessions.UsageLog). A turn is named by its session and the time
-- of its last assistant message (milliseconds, as transcripts store it),
-- so a rebuild from the transcripts adds only what is missing (ON
-- CONFLICT DO NOTHING).
CREATE TABLE usage (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    agent_id    text        COLLATE "C" NOT NULL,
    session_key text        COLLATE "C" NOT NULL DEFAULT '',
    session_id  text        COLLATE "C" NOT NULL,
    entry_id    text        COLLATE "C" NOT NULL DEFAULT '',
    channel     text        COLLATE "C" NOT NULL DEFAULT '',
    room        text        COLLATE "C" NOT NULL DEFAULT '',
    sender_id   text        COLLATE "C" NOT NULL DEFAULT '',
    sender_name text        NOT NULL DEFAULT '',
    provider    text        COLLATE "C" NOT NULL DEFAULT '',
    model       text        COLLATE "C" NOT NULL DEFAULT '',
    input       bigint      NOT NULL DEFAULT 0,
    output      bigint      NOT NULL DEFAULT 0,
    cache_read  bigint      NOT NULL DEFAULT 0,
    cache_write bigint      NOT NULL DEFAULT 0,
    cost        double precision NOT NULL DEFAULT 0,
    UNIQUE (agent_id, session_id, at)
);

-- Reports over a time range, of one agent or all (gateway usage, /api/usage).
CREATE INDEX usage_agent_at ON usage (agent_id, at);
CREATE INDEX usage_at ON usage (at);
-- /usage in chat: one sender's or one session's turns since a time.
CREATE INDEX usage_sender_at ON usage (channel, sender_id, at) WHERE sender_id <> '';
CREATE INDEX usage_session_at ON usage (session_key, at);

-- +goose Down
DROP TABLE usage;
