-- +goose Up
-- usage_at as a block-range index (issue 21). Each turn appends a usage
-- row, in time order, and each paid an entry in the b-tree on at: a
-- descent, a leaf write and its WAL. A BRIN index keeps the least and
-- greatest at of every 8 heap pages instead; a row added to a range not
-- yet summarized writes nothing to it, and autosummarize has autovacuum
-- summarize a range once the inserts moved past it. The time-range reports
-- (Query, Rows with since/until) read it as a bitmap over the ranges that
-- overlap: with 400,000 rows 30 s apart (EXPLAIN ANALYZE, BUFFERS), one
-- day of every agent 89 buffers with the b-tree, 100 with this index;
-- a week of one agent 606 and 526; everything since a date 4,440 and
-- 3,632; Rows of one agent over a day 98 and 100 (a sort of its 2,304
-- rows where the b-tree gave them presorted by at); one session's turns
-- (usage_session_at) unchanged. With 128 pages a range (the default) a
-- day read 264 buffers. Rows written out of time order (a rebuild from
-- old transcripts) only widen the ranges they land in. An insert costs
-- the server less: a loop of 6,000 usage inserts in transactions of 20,
-- WAL per row 991-1,200 bytes with the b-tree, 851-882 with this index
-- (754 with none).
DROP INDEX usage_at;
CREATE INDEX usage_at ON usage USING brin (at) WITH (pages_per_range = 8, autosummarize = on);

-- +goose Down
DROP INDEX usage_at;
CREATE INDEX usage_at ON usage (at);
