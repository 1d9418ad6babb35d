-- +goose Up
-- The search trigger runs only for message rows that come without their
-- search columns (issue 21). The daemon's appends compute them in Go
-- (search_fields.go: search_role 'user' or 'assistant' with the text for
-- to_tsvector, '' for a message the search ignores); the trigger's
-- PL/pgSQL cost about 0.3 ms of server CPU per appended row when a
-- transaction carried one append (each expression of the functions is
-- set up again in every transaction, and the json body is parsed at every
-- operator). Rows of other writers, and the bodies the daemon leaves to
-- the trigger, keep search_role NULL and are filled as before; a session
-- header or another entry type no longer calls the function at all.
DROP TRIGGER transcript_entries_search ON transcript_entries;
CREATE TRIGGER transcript_entries_search BEFORE INSERT ON transcript_entries
    FOR EACH ROW WHEN (NEW.type = 'message' AND NEW.search_role IS NULL)
    EXECUTE FUNCTION gateway_search_fill();

-- +goose Down
DROP TRIGGER transcript_entries_search ON transcript_entries;
CREATE TRIGGER transcript_entries_search BEFORE INSERT ON transcript_entries
    FOR EACH ROW EXECUTE FUNCTION gateway_search_fill();
UPDATE transcript_entries SET search_role = NULL WHERE search_role = '';
