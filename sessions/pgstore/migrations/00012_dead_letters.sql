-- +goose Up
-- Dead letters (sessions.DeadLetters, issue 25): inbound messages and
-- replies the dispatcher gave up, kept with why and when until an operator
-- resubmits or discards them. body is the letter's record or reply as
-- JSON text (text, not jsonb: a record's payload is kept byte for byte).
-- state moves failed -> resubmitting in one UPDATE only one resubmit wins.
CREATE TABLE dead_letters (
    id          text        COLLATE "C" PRIMARY KEY,
    kind        text        NOT NULL,
    state       text        NOT NULL,
    reason      text        NOT NULL,
    at          timestamptz NOT NULL,
    agent_id    text        NOT NULL DEFAULT '',
    session_key text        NOT NULL DEFAULT '',
    body        text        NOT NULL
);
CREATE INDEX dead_letters_at ON dead_letters (at DESC, id);

-- +goose Down
DROP TABLE dead_letters;
