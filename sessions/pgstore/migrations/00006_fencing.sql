-- +goose Up
-- Per-session serialisation across replicas (issue 13). A turn runs under
-- the lease "session:<session key>" (leases, 00005); every write the turn
-- makes (transcript appends, its reply's outbox row) first calls
-- gateway_fence in the same transaction: it locks the lease row FOR SHARE
-- until the commit, so the lease cannot change hands before the write is
-- in, and raises SQLSTATE GWF01 when the token is no longer the current,
-- unexpired one (the holder paused, lost the lease, and another replica
-- runs the session now). The caller rolls back and writes nothing.
-- +goose StatementBegin
CREATE FUNCTION gateway_fence(lease_name text, lease_token bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cur bigint;
    who text;
    live boolean;
BEGIN
    SELECT token, holder, expires_at > clock_timestamp() INTO cur, who, live
    FROM leases WHERE name = lease_name FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lease % token %: no such lease', lease_name, lease_token USING ERRCODE = 'GWF01';
    ELSIF cur <> lease_token THEN
        RAISE EXCEPTION 'lease % token %: % holds token %', lease_name, lease_token, who, cur USING ERRCODE = 'GWF01';
    ELSIF NOT live THEN
        RAISE EXCEPTION 'lease % token %: it expired', lease_name, lease_token USING ERRCODE = 'GWF01';
    END IF;
END
$$;
-- +goose StatementEnd

-- A turn's gate looks for older pending records of its session held by
-- another replica (per-session order across replicas).
CREATE INDEX delivery_records_session_pending ON delivery_records (agent_id, session_key, seq)
    WHERE state = 'pending';

-- +goose Down
DROP INDEX delivery_records_session_pending;
DROP FUNCTION gateway_fence(text, bigint);
