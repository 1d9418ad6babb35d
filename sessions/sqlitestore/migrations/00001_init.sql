-- The session index: one row per (agent, session key), the current
-- session. body is the sessions.Entry as JSON (its known fields), extra the
-- members this release does not know (Entry.Extra); the columns beside it
-- are what queries select and order by. Times are Unix nanoseconds, UTC.
-- Text compares as bytes (SQLite's BINARY collation), the files backend's
-- order.
CREATE TABLE entries (
    agent_id    TEXT    NOT NULL,
    session_key TEXT    NOT NULL,
    session_id  TEXT    NOT NULL UNIQUE,
    updated_at  INTEGER NOT NULL,
    body        TEXT    NOT NULL,
    extra       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, session_key)
) WITHOUT ROWID;
CREATE INDEX entries_recent ON entries (agent_id, updated_at DESC, session_key);

-- Sessions of a key that were reset, deleted or switched away from.
CREATE TABLE archived (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id           TEXT    NOT NULL,
    session_key        TEXT    NOT NULL,
    session_id         TEXT    NOT NULL,
    reason             TEXT    NOT NULL,
    archived_at        INTEGER NOT NULL,
    title              TEXT    NOT NULL DEFAULT '',
    session_started_at INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    message_count      INTEGER NOT NULL DEFAULT 0,
    total_tokens       INTEGER NOT NULL DEFAULT 0,
    deleted            INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX archived_by_key ON archived (agent_id, session_key, archived_at DESC, id DESC);
CREATE INDEX archived_by_session ON archived (session_id);

-- Transcripts: append-only, one row per JSONL line of the files backend,
-- body the line's bytes; seq numbers a session's entries from 1 (the
-- session header).
CREATE TABLE transcript_entries (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    parent_id  TEXT,
    type       TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
) WITHOUT ROWID;
CREATE INDEX transcript_compactions ON transcript_entries (session_id, seq) WHERE type = 'compaction';

-- Each transcript's head: its last seq, leaf entry and message count.
CREATE TABLE transcript_heads (
    session_id TEXT    PRIMARY KEY,
    last_seq   INTEGER NOT NULL,
    leaf_id    TEXT    NOT NULL DEFAULT '',
    messages   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Channel cursors (the Telegram offset...): one row per (scope, name).
CREATE TABLE cursors (
    scope      TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;

-- The ingress journal: every accepted record until it is done, and the
-- ids done, kept for duplicate detection (sessions.DoneRetention,
-- DoneKeep). seq is the accept order; owner the handle (process) that
-- accepted it (its records are in its hands, not Pending's); reply the
-- outbox reply that answers it, while that reply is being delivered.
CREATE TABLE journal (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT    NOT NULL UNIQUE,
    agent_id    TEXT    NOT NULL DEFAULT '',
    session_key TEXT    NOT NULL DEFAULT '',
    payload     TEXT    NOT NULL DEFAULT '',
    starts      INTEGER NOT NULL DEFAULT 0,
    failures    INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    consumed    INTEGER NOT NULL DEFAULT 0,
    accepted_at INTEGER NOT NULL,
    owner       TEXT    NOT NULL DEFAULT '',
    reply       TEXT,
    done_at     INTEGER
);
CREATE INDEX journal_pending ON journal (seq) WHERE done_at IS NULL;
CREATE INDEX journal_done ON journal (done_at, seq) WHERE done_at IS NOT NULL;

-- The reply outbox: replies stored before their first chunk is sent, the
-- sessions.Reply as JSON in body; sent counts the chunks delivered.
CREATE TABLE outbox (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    id     TEXT    NOT NULL UNIQUE,
    body   TEXT    NOT NULL,
    chunks INTEGER NOT NULL,
    sent   INTEGER NOT NULL DEFAULT 0
);

-- Drafts: progress messages shown in a chat, to clean up after a crash;
-- owner as in journal.
CREATE TABLE drafts (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    id    TEXT    NOT NULL UNIQUE,
    owner TEXT    NOT NULL DEFAULT '',
    body  TEXT    NOT NULL
);

-- Pairing: each channel's pairstate.Data (pending requests and approved
-- senders) as one JSON document, rewritten whole by an update.
CREATE TABLE pairing (
    channel    TEXT    PRIMARY KEY,
    body       TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Dead letters (sessions.DeadLetters): body is the letter's record or
-- reply as JSON.
CREATE TABLE dead_letters (
    id          TEXT    PRIMARY KEY,
    kind        TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    agent_id    TEXT    NOT NULL DEFAULT '',
    session_key TEXT    NOT NULL DEFAULT '',
    body        TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX dead_letters_at ON dead_letters (at DESC, id);

-- Budget counters of package limits (sessions.LimitCounters).
CREATE TABLE limit_counters (
    scope        TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    period       TEXT    NOT NULL,
    window_start INTEGER NOT NULL,
    window_end   INTEGER NOT NULL,
    tokens       INTEGER NOT NULL DEFAULT 0,
    cost_usd     REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, subject, period, window_start)
) WITHOUT ROWID;
CREATE INDEX limit_counters_end ON limit_counters (window_end);

-- The usage ledger (sessions.UsageLog): one row per model call; at is Unix
-- milliseconds (transcript times are milliseconds). A row whose agent,
-- session id and time are stored already is a repeat.
CREATE TABLE usage (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    agent_id    TEXT    NOT NULL,
    session_key TEXT    NOT NULL DEFAULT '',
    session_id  TEXT    NOT NULL,
    entry_id    TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL DEFAULT '',
    room        TEXT    NOT NULL DEFAULT '',
    sender_id   TEXT    NOT NULL DEFAULT '',
    sender_name TEXT    NOT NULL DEFAULT '',
    provider    TEXT    NOT NULL DEFAULT '',
    model       TEXT    NOT NULL DEFAULT '',
    input       INTEGER NOT NULL DEFAULT 0,
    output      INTEGER NOT NULL DEFAULT 0,
    cache_read  INTEGER NOT NULL DEFAULT 0,
    cache_write INTEGER NOT NULL DEFAULT 0,
    cost        REAL    NOT NULL DEFAULT 0,
    UNIQUE (agent_id, session_id, at)
);
CREATE INDEX usage_agent_at ON usage (agent_id, at);
CREATE INDEX usage_at ON usage (at);
CREATE INDEX usage_sender ON usage (channel, sender_id, at);
CREATE INDEX usage_session ON usage (session_key, at);

-- The agents' notes (sessions.Memory): a scope's row hands out note ids
-- (never reused while the scope lives) and goes with its last note.
CREATE TABLE memory_scopes (
    agent_id   TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    scope_id   TEXT    NOT NULL,
    next_id    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, kind, scope_id)
) WITHOUT ROWID;
CREATE TABLE memory_notes (
    agent_id   TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    scope_id   TEXT    NOT NULL,
    id         INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, kind, scope_id, id),
    FOREIGN KEY (agent_id, kind, scope_id) REFERENCES memory_scopes ON DELETE CASCADE
) WITHOUT ROWID;

-- Scheduled jobs (sessions.Jobs): the job as JSON in body, the columns the
-- scheduler selects on beside it (authoritative for state, due time and
-- claim). Times are Unix nanoseconds; claim_until 0 is none.
CREATE TABLE jobs (
    id          TEXT    PRIMARY KEY,
    agent_id    TEXT    NOT NULL,
    session_key TEXT    NOT NULL,
    chat_key    TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    next_at     INTEGER NOT NULL,
    claim_owner TEXT    NOT NULL DEFAULT '',
    claim_until INTEGER NOT NULL DEFAULT 0,
    body        TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX jobs_due ON jobs (next_at, id) WHERE state = 'active';
CREATE INDEX jobs_chat ON jobs (chat_key);

-- Named sequences (room history's entries and removals).
CREATE TABLE sequences (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO sequences (name, value) VALUES ('room_history', 0), ('room_history_gone', 0);

-- Room history of group rooms: one row per kept message; seq is global
-- (sequences 'room_history'). room and message_id are BLOBs: a platform's
-- ids are compared as the bytes they are. body is the entry as the files
-- log encodes it (JSON). A removed entry with a message id stays (gone_seq
-- set) so a redelivery is recognised; the newest removed ones are kept.
CREATE TABLE room_history (
    seq        INTEGER PRIMARY KEY,
    room       BLOB    NOT NULL,
    message_id BLOB,
    at_ms      INTEGER NOT NULL,
    text_bytes INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    gone_seq   INTEGER
);
CREATE UNIQUE INDEX room_history_message ON room_history (room, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX room_history_kept ON room_history (room, seq) WHERE gone_seq IS NULL;
CREATE INDEX room_history_gone ON room_history (gone_seq) WHERE gone_seq IS NOT NULL;

-- The message tool's record of each room's messages
-- (sessions.RoomMessages): seq is the order ids were first noted in.
CREATE TABLE room_messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    room       TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    own        INTEGER NOT NULL DEFAULT 0,
    at         INTEGER NOT NULL,
    UNIQUE (room, message_id)
);
CREATE INDEX room_messages_room ON room_messages (room, seq);

-- Transcript search (sessions.Searcher): the user and assistant messages'
-- text (search_docs) and their words as sessions/searchtext splits them
-- (search_terms), written by the append that stores the message.
CREATE TABLE search_docs (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    role       TEXT    NOT NULL,
    at_ms      INTEGER NOT NULL,
    text       TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE search_terms (
    token      TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (token, session_id, seq)
) WITHOUT ROWID;
