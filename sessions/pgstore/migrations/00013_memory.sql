-- +goose Up
-- Agent memory (sessions.Memory, issue 24): notes that survive /new, per
-- agent, per sender and per room. A scope's row holds the number its next
-- note takes; a write locks that row (the upsert) before it counts the
-- notes, so concurrent writers in any replica queue and none passes the
-- scope's limit. Deleting the scope row deletes its notes.
CREATE TABLE memory_scopes (
    agent_id   text        COLLATE "C" NOT NULL,
    kind       text        COLLATE "C" NOT NULL,
    scope_id   text        COLLATE "C" NOT NULL,
    next_id    bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, kind, scope_id)
);
CREATE TABLE memory_notes (
    agent_id   text        COLLATE "C" NOT NULL,
    kind       text        COLLATE "C" NOT NULL,
    scope_id   text        COLLATE "C" NOT NULL,
    id         bigint      NOT NULL,
    body       text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, kind, scope_id, id),
    FOREIGN KEY (agent_id, kind, scope_id) REFERENCES memory_scopes ON DELETE CASCADE
);

-- +goose Down
DROP TABLE memory_notes;
DROP TABLE memory_scopes;
