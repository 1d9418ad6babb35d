-- +goose Up
-- One lease per handle instead of one per row (issue 21: leases and
-- heartbeats off the per-message path). Each Delivery handle (one per
-- process, owner = a UUID) leased every pending record and reply it held
-- with its row's lease_until and rewrote them all every Lease/3 (3.3 s):
-- O(backlog) row versions, WAL and vacuum, forever. With a slow model and
-- a backlog of 10,000 messages that is 3,000 row updates a second; a burst
-- of 200 messages through the daemon with a 1 s model wrote 37.8 rows a
-- message against 15 with an instant one. A handle now renews this one
-- row, whatever it holds; a row whose owner has a row here is leased by it
-- (the handle writes the row's own lease_until as 'infinity', so a replica
-- of the release before, which reads lease_until alone, never takes a live
-- handle's rows by lease; it still takes a dead one's, through the owner's
-- advisory lock). Rows of owners without a row here (written by that
-- release) keep their own lease_until. Close expires its row; the handles'
-- prune deletes the rows of dead owners expired for a day that hold
-- nothing.
CREATE TABLE delivery_owners (
    owner       text        PRIMARY KEY,
    lease_until timestamptz NOT NULL
);

-- +goose Down
DROP TABLE delivery_owners;
