-- +goose Up
-- Leases with fencing tokens (issue 13): one row per named lease (a leader
-- role such as "telegram:<account>", later a session). A row is never
-- deleted, so token only grows: each new holder gets a higher one, and a
-- write fenced by an older token is refused. Expiry is the database's
-- clock, never a replica's.
CREATE TABLE leases (
    name        text        COLLATE "C" PRIMARY KEY,
    holder      text        NOT NULL,
    token       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- The replicas sharing this database, each with its heartbeat (gateway
-- doctor lists them and the leases they hold).
CREATE TABLE replicas (
    id         text        COLLATE "C" PRIMARY KEY,
    host       text        NOT NULL,
    pid        integer     NOT NULL,
    version    text        NOT NULL,
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE replicas;
DROP TABLE leases;
