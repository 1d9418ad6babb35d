-- +goose Up
-- One index fewer per reply (issue 21). delivery_replies holds only the
-- replies not yet all sent: each turn's reply is inserted and, once sent,
-- deleted, and each paid an entry in delivery_replies_seq (and left a dead
-- one behind). Its readers, the claims of other handles' replies (oldest
-- first, ORDER BY seq), read a table of the replies in flight; sorting
-- those costs them less than the index cost every reply.
DROP INDEX delivery_replies_seq;

-- +goose Down
CREATE INDEX delivery_replies_seq ON delivery_replies (seq);
