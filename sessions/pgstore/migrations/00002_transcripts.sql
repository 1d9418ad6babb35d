-- +goose Up
-- Transcripts behind sessions.TranscriptLog (the chained pi-coding-agent
-- entries of the files backend).
--
-- first_kept_id is a compaction's firstKeptEntryId as a column: loading a
-- session reads it without parsing the body (the json operators refuse a
-- body holding \u0000 anywhere, which a message may carry).
ALTER TABLE transcript_entries ADD COLUMN first_kept_id text COLLATE "C";
UPDATE transcript_entries
   SET first_kept_id = substring(body::text FROM '"firstKeptEntryId":"([^"\\]*)"')
 WHERE type = 'compaction';

-- The head of each transcript, updated under its row lock by every append:
-- leaf_id is the last entry of the chain (the parent of the next one);
-- prev_leaf_id is the leaf before the latest append ('' when there was
-- none), and NULL only right after the row was created, which tells the
-- append that created it to write the session header first; messages
-- counts the message entries (Stats).
ALTER TABLE transcript_heads
    ADD COLUMN leaf_id      text COLLATE "C",
    ADD COLUMN prev_leaf_id text COLLATE "C",
    ADD COLUMN messages     bigint NOT NULL DEFAULT 0;
UPDATE transcript_heads h SET
    leaf_id = (SELECT e.id FROM transcript_entries e
                WHERE e.session_id = h.session_id AND e.type <> 'session'
                ORDER BY e.seq DESC LIMIT 1),
    prev_leaf_id = '',
    messages = (SELECT count(*) FROM transcript_entries e
                 WHERE e.session_id = h.session_id AND e.type = 'message');

-- +goose Down
ALTER TABLE transcript_heads DROP COLUMN messages, DROP COLUMN prev_leaf_id, DROP COLUMN leaf_id;
ALTER TABLE transcript_entries DROP COLUMN first_kept_id;
