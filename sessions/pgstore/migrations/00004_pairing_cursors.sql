-- +goose Up
-- Channel cursors keyed by scope (a channel account, "telegram:<account>")
-- and name ("offset", "migration:<old chat id>"), the seam's Cursors. The
-- table of 00001 keyed them by (channel, account, name); nothing wrote it
-- before the seam, so it is replaced, not converted.
DROP TABLE cursors;
CREATE TABLE cursors (
    scope      text        COLLATE "C" NOT NULL,
    name       text        COLLATE "C" NOT NULL,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, name)
);

-- Pairing (package access keeps the rules): one row per channel that has
-- stored data, and its pending requests and approved senders as rows. pos
-- keeps the order of each list. UpdatePairing rewrites a channel's rows in
-- one transaction holding an advisory lock of the channel, so concurrent
-- updates (of any replica) queue instead of losing each other.
CREATE TABLE pairing_channels (
    channel    text        COLLATE "C" PRIMARY KEY,
    updated_at timestamptz NOT NULL
);

CREATE TABLE pairing_requests (
    channel     text        COLLATE "C" NOT NULL REFERENCES pairing_channels ON DELETE CASCADE,
    pos         integer     NOT NULL,
    account_id  text        NOT NULL,
    code        text        NOT NULL,
    sender_id   text        NOT NULL,
    sender_name text        NOT NULL DEFAULT '',
    chat_id     text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (channel, pos)
);

CREATE TABLE pairing_approvals (
    channel     text        COLLATE "C" NOT NULL REFERENCES pairing_channels ON DELETE CASCADE,
    pos         integer     NOT NULL,
    account_id  text        NOT NULL,
    sender_id   text        NOT NULL,
    sender_name text        NOT NULL DEFAULT '',
    code        text        NOT NULL DEFAULT '',
    approved_at timestamptz NOT NULL,
    PRIMARY KEY (channel, pos)
);

-- +goose Down
DROP TABLE pairing_approvals;
DROP TABLE pairing_requests;
DROP TABLE pairing_channels;
DROP TABLE cursors;
CREATE TABLE cursors (
    channel    text        NOT NULL,
    account    text        NOT NULL,
    name       text        NOT NULL,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, account, name)
);
