-- +goose Up
-- A turn's write is fenced by its session lease's token, not by its
-- expiry (issue 22, the replica-restart stall). A token changes only when
-- someone acquires the lease again (a new holder, or this one after the
-- expiry: leases, 00005/lease.go), so a write whose token is still the
-- current one can conflict with no other turn of the session, expired or
-- not: nobody ran it since. Refusing it lost the marks a replica wrote while
-- the server was down (its outbox "ready" mark, kept in memory and retried
-- once the server was back, after the lease had run out unclaimed): the
-- reply had been sent, its records stayed pending under a live owner that
-- had forgotten them, and every later message of the session waited behind
-- them. The row is still locked FOR SHARE until the commit, so an acquire
-- (which raises the token) is ordered before or after the write, never
-- beside it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gateway_fence(lease_name text, lease_token bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cur bigint;
    who text;
BEGIN
    SELECT token, holder INTO cur, who FROM leases WHERE name = lease_name FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lease % token %: no such lease', lease_name, lease_token USING ERRCODE = 'GWF01';
    ELSIF cur <> lease_token THEN
        RAISE EXCEPTION 'lease % token %: % holds token %', lease_name, lease_token, who, cur USING ERRCODE = 'GWF01';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gateway_fence(lease_name text, lease_token bigint) RETURNS void
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
