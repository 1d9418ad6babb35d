-- +goose Up
-- Heap-only updates of a session's entry (issue 21). A turn updates its
-- entry once or twice (the touch, the counters), and each update moved
-- updated_at, a column of entries_recent: every update wrote a new row
-- version plus an entry in each of the three indexes, with a uniqueness
-- check in two of them. Without entries_recent no update of a turn changes
-- an indexed column (session_key and session_id change only on a rename
-- or a rollover), so with room left on the page (fillfactor) the new
-- version stays on it and no index is written.
--
-- entries_recent served List and Recent (ORDER BY updated_at DESC, one
-- agent's rows) and the maintenance sweeps; they now read the agent's rows
-- through the primary key (agent_id, session_key) and sort them (a top-N
-- sort for Recent): a read over one agent's sessions, where every message
-- paid for the index. It also misled the updates themselves: before
-- entries was analyzed their generic plan found the row through
-- entries_recent, reading the agent's whole range of it.
DROP INDEX entries_recent;
ALTER TABLE entries SET (fillfactor = 80);

-- A delivery record is updated after its insert (its start count, then
-- its reply and state): room on the page keeps the start count's update,
-- which changes no indexed column, heap-only.
ALTER TABLE delivery_records SET (fillfactor = 80);

-- +goose Down
ALTER TABLE delivery_records RESET (fillfactor);
ALTER TABLE entries RESET (fillfactor);
CREATE INDEX entries_recent ON entries (agent_id, updated_at DESC, session_key);
