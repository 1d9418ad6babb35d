-- +goose Up
-- One index fewer per accepted record (issue 21). Each record was entered
-- in two indexes of the pending records: delivery_records_pending (seq)
-- and delivery_records_session_pending (agent_id, session_key, seq), both
-- WHERE state = 'pending'. The second serves the one per-message reader
-- that picks rows out of the pending set, the turn's gate (one session's
-- records); the first served only the readers that take the whole pending
-- set (the take-over of dead handles' records, Claim, the lease renewal
-- and release, Stats, the replica status, doctor's backlog), which read
-- every pending row either way: in steady state no pending row passes
-- their filters (owner, lease), so the walk in seq order stopped at no
-- limit early. They now read the same rows through the other partial
-- index and sort them by seq (a sort of the records in flight), as 00023
-- did for the replies. With 50,000 done and 300 pending records the plans
-- stay index scans (TestPendingSetReadersUseAnIndex). WAL a message, a
-- burst of 1,000 through the daemon (pg_waldump): one b-tree leaf insert
-- (64 bytes) fewer of the 15 it wrote.
DROP INDEX delivery_records_pending;

-- +goose Down
CREATE INDEX delivery_records_pending ON delivery_records (seq) WHERE state = 'pending';
