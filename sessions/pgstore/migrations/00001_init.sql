-- +goose Up
-- The session index: one row per (agent, session key), the current session.
-- Keys and ids collate as bytes ("C"): the order of the files backend
-- (Go string comparison), independent of the server's locale.
-- Clocks and counters are columns (the reset policies and listings read
-- them); text fields are NOT NULL DEFAULT '' like the Go zero values.
CREATE TABLE entries (
    agent_id            text        COLLATE "C" NOT NULL,
    session_key         text        COLLATE "C" NOT NULL,
    session_id          text        COLLATE "C" NOT NULL UNIQUE,
    created_at          timestamptz NOT NULL,
    session_started_at  timestamptz NOT NULL,
    last_interaction_at timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    title               text        NOT NULL DEFAULT '',
    channel             text        NOT NULL DEFAULT '',
    chat_type           text        NOT NULL DEFAULT '',
    last_channel        text        NOT NULL DEFAULT '',
    last_to             text        NOT NULL DEFAULT '',
    last_account_id     text        NOT NULL DEFAULT '',
    last_thread_id      text        NOT NULL DEFAULT '',
    last_from           text        NOT NULL DEFAULT '',
    display_name        text        NOT NULL DEFAULT '',
    model               text        NOT NULL DEFAULT '',
    provider            text        NOT NULL DEFAULT '',
    model_override      text        NOT NULL DEFAULT '',
    queue_mode          text        NOT NULL DEFAULT '',
    queue_debounce_ms   bigint      NOT NULL DEFAULT 0,
    queue_cap           integer     NOT NULL DEFAULT 0,
    queue_drop          text        NOT NULL DEFAULT '',
    input_tokens        bigint      NOT NULL DEFAULT 0,
    output_tokens       bigint      NOT NULL DEFAULT 0,
    total_tokens        bigint      NOT NULL DEFAULT 0,
    context_tokens      bigint      NOT NULL DEFAULT 0,
    compaction_count    integer     NOT NULL DEFAULT 0,
    message_count       integer     NOT NULL DEFAULT 0,
    spawned_by          text        NOT NULL DEFAULT '',
    parent_session_key  text        NOT NULL DEFAULT '',
    label               text        NOT NULL DEFAULT '',
    -- The files backend's byte offset of the latest compaction; kept so a
    -- migration between backends is lossless. pgstore finds compactions by
    -- the transcript_compactions index instead.
    compaction_offset   bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, session_key)
);
-- List and Recent: most recently updated first, ties by key.
CREATE INDEX entries_recent ON entries (agent_id, updated_at DESC, session_key);

-- Sessions of a key that were reset, deleted or switched away from.
CREATE TABLE archived (
    id                 bigserial   PRIMARY KEY,
    agent_id           text        COLLATE "C" NOT NULL,
    session_key        text        COLLATE "C" NOT NULL,
    session_id         text        COLLATE "C" NOT NULL,
    reason             text        NOT NULL,
    archived_at        timestamptz NOT NULL,
    title              text        NOT NULL DEFAULT '',
    session_started_at timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    message_count      integer     NOT NULL DEFAULT 0,
    total_tokens       bigint      NOT NULL DEFAULT 0,
    deleted            boolean     NOT NULL DEFAULT false
);
CREATE INDEX archived_by_key ON archived (agent_id, session_key, archived_at DESC, id DESC);
CREATE INDEX archived_by_session ON archived (session_id);

-- Transcripts: append-only, one row per JSONL line of the files backend.
-- body is json (not jsonb): it keeps the entry's bytes exactly, which the
-- pi-coding-agent format round trip needs, and costs no parse tree on write.
CREATE TABLE transcript_entries (
    session_id text        COLLATE "C" NOT NULL,
    seq        bigint      NOT NULL,
    id         text        COLLATE "C" NOT NULL,
    parent_id  text        COLLATE "C",
    type       text        NOT NULL,
    body       json        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
);
-- Loading a session starts at its latest compaction: found by this small
-- partial index without reading the entries before it.
CREATE INDEX transcript_compactions ON transcript_entries (session_id, seq DESC)
    WHERE type = 'compaction';

-- The next sequence number of each transcript. Appends update this row
-- first, so concurrent appends to one session queue on its row lock.
CREATE TABLE transcript_heads (
    session_id text   COLLATE "C" PRIMARY KEY,
    last_seq   bigint NOT NULL
);

-- Durable ingress (SPEC §3.7): accepted inbound messages before the channel
-- is acknowledged. Workers claim rows with FOR UPDATE SKIP LOCKED; a claim
-- whose lease ran out is claimable again.
CREATE TABLE journal (
    id            bigserial   PRIMARY KEY,
    agent_id      text        NOT NULL,
    session_key   text        NOT NULL,
    channel       text        NOT NULL,
    account_id    text        NOT NULL DEFAULT '',
    message_id    text        NOT NULL,
    status        text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'claimed', 'consumed', 'failed')),
    body          json        NOT NULL,
    attempts      integer     NOT NULL DEFAULT 0,
    claimed_by    text        NOT NULL DEFAULT '',
    claimed_until timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- Duplicate deliveries (same channel message id) are dropped.
    UNIQUE (channel, account_id, message_id)
);
CREATE INDEX journal_claimable ON journal (id) WHERE status IN ('pending', 'claimed');

-- The reply outbox: one row per reply, written before the first send;
-- delivered counts the chunks the platform accepted.
CREATE TABLE outbox (
    id            bigserial   PRIMARY KEY,
    agent_id      text        NOT NULL,
    session_key   text        NOT NULL,
    record_ids    bigint[]    NOT NULL,
    target        json        NOT NULL,
    chunks        text[]      NOT NULL,
    delivered     integer     NOT NULL DEFAULT 0,
    entry_id      text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'claimed', 'sent', 'failed')),
    claimed_by    text        NOT NULL DEFAULT '',
    claimed_until timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_claimable ON outbox (id) WHERE status IN ('pending', 'claimed');

-- Channel cursors, e.g. the Telegram getUpdates offset of one bot account.
CREATE TABLE cursors (
    channel    text        NOT NULL,
    account    text        NOT NULL,
    name       text        NOT NULL,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, account, name)
);

-- +goose Down
DROP TABLE cursors;
DROP TABLE outbox;
DROP TABLE journal;
DROP TABLE transcript_heads;
DROP TABLE transcript_entries;
DROP TABLE archived;
DROP TABLE entries;
