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
CREATE FUNCTION gateway_search_row_raw(body json, OUT role text, OUT at_ms bigint, OUT txt text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT m->>'role',
           CASE WHEN json_typeof(m->'timestamp') = 'number' THEN (m->>'timestamp')::numeric::bigint END,
           CASE json_typeof(m->'content')
               WHEN 'string' THEN m->>'content'
               WHEN 'array' THEN (SELECT string_agg(c->>'text', E'\n') FROM json_array_elements(m->'content') c
                                   WHERE json_typeof(c) = 'object' AND c->>'type' = 'text')
           END
    FROM (SELECT body->'message' AS m) s
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION gateway_search_row(body json, OUT role text, OUT at_ms bigint, OUT txt text)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    SELECT r.role, r.at_ms, r.txt INTO role, at_ms, txt FROM gateway_search_row_raw(body) r;
EXCEPTION WHEN OTHERS THEN
    BEGIN
        SELECT r.role, r.at_ms, r.txt INTO role, at_ms, txt
          FROM gateway_search_row_raw(replace(body::text, '\u0000', ' ')::json) r;
    EXCEPTION WHEN OTHERS THEN
        role := NULL; at_ms := NULL; txt := NULL;
    END;
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

-- +goose Down
DROP INDEX transcript_entries_search;
DROP TRIGGER transcript_entries_search ON transcript_entries;
DROP FUNCTION gateway_search_fill();
DROP FUNCTION gateway_search_row(json);
DROP FUNCTION gateway_search_row_raw(json);
ALTER TABLE transcript_entries DROP COLUMN search_at, DROP COLUMN search_role, DROP COLUMN search;
