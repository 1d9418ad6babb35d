-- +goose Up
-- Delivery (SPEC §3.7) in the model of the files journal (sessions.Journal):
-- records with string ids and their counters, replies stored before their
-- first send, drafts on screen. The journal/outbox tables of 00001 were a
-- first sketch with numeric ids and no replies-to-records link; nothing
-- wrote them outside tests, so they go.
DROP TABLE outbox;
DROP TABLE journal;

-- delivery_seq orders records, replies and drafts as the files journal's
-- line order does, and numbers completions (done_seq: the newest DoneKeep
-- completed ids are remembered whatever their age).
CREATE SEQUENCE delivery_seq;

-- One row per accepted record. A pending record is waiting for, or in, a
-- turn; reply names the outstanding reply answering it. A done record keeps
-- its id (duplicate detection, sessions.DoneRetention/DoneKeep) and loses
-- its payload. owner is the handle that accepted or claimed it (Pending
-- leaves a handle's own records out, as the files journal leaves out the
-- records of its process); lease_until lets another replica claim it with
-- FOR UPDATE SKIP LOCKED once the lease ran out.
CREATE TABLE delivery_records (
    id          text        COLLATE "C" PRIMARY KEY,
    seq         bigint      NOT NULL,
    state       text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done')),
    agent_id    text        NOT NULL DEFAULT '',
    session_key text        NOT NULL DEFAULT '',
    payload     json,
    starts      integer     NOT NULL DEFAULT 0,
    failures    integer     NOT NULL DEFAULT 0,
    attempts    integer     NOT NULL DEFAULT 0,
    consumed    boolean     NOT NULL DEFAULT false,
    accepted_at timestamptz NOT NULL,
    reply       text        COLLATE "C",
    owner       text        NOT NULL DEFAULT '',
    lease_until timestamptz,
    done_at     timestamptz,
    done_seq    bigint
);
CREATE INDEX delivery_records_pending ON delivery_records (seq) WHERE state = 'pending';
CREATE INDEX delivery_records_done ON delivery_records (done_seq) WHERE state = 'done';
CREATE INDEX delivery_records_reply ON delivery_records (reply) WHERE reply IS NOT NULL;

-- One row per reply not completely delivered. chunks is a JSON array of
-- strings (json keeps any text a model wrote, NUL included, as the files
-- journal's JSON line does); n_chunks is its length.
CREATE TABLE delivery_replies (
    id          text        COLLATE "C" PRIMARY KEY,
    seq         bigint      NOT NULL,
    records     text[]      NOT NULL,
    agent_id    text        NOT NULL DEFAULT '',
    session_key text        NOT NULL DEFAULT '',
    target      json        NOT NULL,
    chunks      json        NOT NULL,
    n_chunks    integer     NOT NULL,
    sent        integer     NOT NULL DEFAULT 0,
    entry_id    text        NOT NULL DEFAULT '',
    draft       text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    owner       text        NOT NULL DEFAULT '',
    lease_until timestamptz
);
CREATE INDEX delivery_replies_seq ON delivery_replies (seq);

-- Drafts on screen (sessions.Draft): recorded when posted, retired when
-- deleted or taken over by a reply.
CREATE TABLE delivery_drafts (
    id          text        COLLATE "C" PRIMARY KEY,
    seq         bigint      NOT NULL,
    session_key text        NOT NULL DEFAULT '',
    target      json        NOT NULL,
    message_id  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    owner       text        NOT NULL DEFAULT ''
);
CREATE INDEX delivery_drafts_seq ON delivery_drafts (seq);

-- Room history (sessions.RoomHistory): unaddressed group messages kept for
-- the next turn. seq is global (room_history_seq). room and message_id are
-- bytea: a platform's ids are compared as the bytes they are. body is the
-- entry as the files log encodes it (ids, names, time and text, JSON); the
-- columns beside it serve the access paths. A removed entry with a message
-- id stays (gone_seq set) so a redelivery is recognised; the newest
-- removed ones are kept, older ones pruned.
CREATE SEQUENCE room_history_seq;
CREATE SEQUENCE room_history_gone_seq;
CREATE TABLE room_history (
    seq        bigint  PRIMARY KEY,
    room       bytea   NOT NULL,
    message_id bytea,
    at_ms      bigint  NOT NULL,
    text_bytes integer NOT NULL,
    body       json    NOT NULL,
    gone_seq   bigint
);
CREATE UNIQUE INDEX room_history_message ON room_history (room, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX room_history_kept ON room_history (room, seq) WHERE gone_seq IS NULL;
CREATE INDEX room_history_gone ON room_history (gone_seq) WHERE gone_seq IS NOT NULL;

-- +goose Down
DROP TABLE room_history;
DROP SEQUENCE room_history_gone_seq;
DROP SEQUENCE room_history_seq;
DROP TABLE delivery_drafts;
DROP TABLE delivery_replies;
DROP TABLE delivery_records;
DROP SEQUENCE delivery_seq;
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
    UNIQUE (channel, account_id, message_id)
);
CREATE INDEX journal_claimable ON journal (id) WHERE status IN ('pending', 'claimed');
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
