-- +goose Up
-- Transcript search (issue 14). Each user or assistant message entry (not
-- tool results: fetched pages, JSON) gets its searchable
-- text as a tsvector ('simple' configuration: lower-cased words, no
-- stemming or stop words, like the files backend's index), its role and
-- its time (the message's own timestamp, else the row's), set by a trigger
-- on insert so no writer of transcript_entries has to know about search.
-- The json operators refuse a body holding \u0000 anywhere (see 00002):
-- gateway_search_row then reads the body with spaces in their place, and a
-- body it still cannot read is not searchable rather than not written.
ALTER TABLE transcript_entries
    ADD COLUMN search      tsvector,
    ADD COLUMN search_role text,
    ADD COLUMN search_at   timestamptz;

-- +goose StatementBegin
-- gateway_search_row reads a message entry's role, timestamp (ms) and text
-- blocks. No exception block on the common path: a subtransaction per
-- insert cost about 150 µs a row; the trigger now costs about 35-40 µs a
-- row with to_tsvector, the GIN index about 30 µs more (20,000 inserts).
CREATE FUNCTION gateway_search_row(body json, OUT role text, OUT at_ms bigint, OUT txt text)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    b json := body;
    m json;
    c json;
BEGIN
    IF strpos(body::text, '\u0000') > 0 THEN
        BEGIN
            b := replace(body::text, '\u0000', ' ')::json;
        EXCEPTION WHEN OTHERS THEN
            RETURN;
        END;
    END IF;
    m := b->'message';
    role := m->>'role';
    IF json_typeof(m->'timestamp') = 'number' THEN
        at_ms := (m->>'timestamp')::numeric::bigint;
    END IF;
    IF json_typeof(m->'content') = 'string' THEN
        txt := m->>'content';
    ELSIF json_typeof(m->'content') = 'array' THEN
        FOR c IN SELECT json_array_elements(m->'content') LOOP
            IF json_typeof(c) = 'object' AND c->>'type' = 'text' THEN
                txt := concat_ws(E'\n', txt, c->>'text');
            END IF;
        END LOOP;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gateway_search_fill() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF NEW.type = 'message' THEN
        r := gateway_search_row(NEW.body);
        IF r.role IN ('user', 'assistant') AND COALESCE(r.txt, '') <> '' THEN
            NEW.search := to_tsvector('simple', r.txt);
            NEW.search_role := r.role;
            NEW.search_at := COALESCE(to_timestamp(r.at_ms / 1000.0), NEW.created_at);
        END IF;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER transcript_entries_search BEFORE INSERT ON transcript_entries
    FOR EACH ROW EXECUTE FUNCTION gateway_search_fill();

UPDATE transcript_entries t
   SET search = to_tsvector('simple', s.txt), search_role = s.role,
       search_at = COALESCE(to_timestamp(s.at_ms / 1000.0), t.created_at)
  FROM (SELECT session_id, seq, (gateway_search_row(body)).* FROM transcript_entries WHERE type = 'message') s
 WHERE t.session_id = s.session_id AND t.seq = s.seq
   AND s.role IN ('user', 'assistant') AND COALESCE(s.txt, '') <> '';

CREATE INDEX transcript_entries_search ON transcript_entries USING gin (search) WHERE search IS NOT NULL;
-- Newest first: for a word in most messages the planner walks this one
-- backwards and stops at the limit instead of sorting every match.
CREATE INDEX transcript_entries_search_at ON transcript_entries (search_at DESC) WHERE search IS NOT NULL;

-- +goose Down
DROP INDEX transcript_entries_search_at;
DROP INDEX transcript_entries_search;
DROP TRIGGER transcript_entries_search ON transcript_entries;
DROP FUNCTION gateway_search_fill();
DROP FUNCTION gateway_search_row(json);
ALTER TABLE transcript_entries DROP COLUMN search_at, DROP COLUMN search_role, DROP COLUMN search;
