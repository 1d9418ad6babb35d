-- +goose Up
-- Heap-only answers (issue 21). Ready sets a record's reply (with its
-- owner and lease), and reply was the column of delivery_records_reply:
-- each turn's answer wrote a new row version plus an entry in all four
-- indexes of delivery_records (the primary key, delivery_records_pending,
-- delivery_records_session_pending and this one). The index's only readers
-- were the two statements retiring a sent reply, which found its records
-- by reply; they now take them from the reply's own list (the records
-- column of the delivery_replies row they delete) through the primary key,
-- keeping those whose reply it still is, which is how the files journal
-- picks them. With no indexed column changed the answer is heap-only when
-- its page has room: a record is updated twice that way (its start count,
-- its answer) before the non-heap-only update that finishes it, and with
-- fillfactor 80 (migration 00021) many found no room (a 1,000-message
-- burst, pg_stat_user_tables: 227 of 629 updates heap-only midway at 80;
-- 2,098 of 3,555 at the end at 50, nearly every update but the finishing
-- ones). A done record drops its payload,
-- so the table's size is mostly the pending records'.
DROP INDEX delivery_records_reply;
ALTER TABLE delivery_records SET (fillfactor = 50);

-- +goose Down
ALTER TABLE delivery_records SET (fillfactor = 80);
CREATE INDEX delivery_records_reply ON delivery_records (reply) WHERE reply IS NOT NULL;
