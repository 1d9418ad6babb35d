package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Owner leases: a handle leases what it holds with one row of its own in
// delivery_owners, renewed by its loop every Lease/3 and expired by Close,
// whatever its backlog (issue 21: renewing every pending record and reply
// was O(backlog) row updates every 3.3 s). A record or reply whose owner
// has such a row is leased by it; the row's own lease_until is written as
// 'infinity' (rowLease), which a replica of the release before (it reads
// lease_until alone, migration 00031) never takes by lease: it takes a
// live handle's rows only once its owner lock is gone. A row of an owner
// without an owner row (written by that release) is leased by its own
// lease_until, as before.
//
// Only its owner writes an owner row (Renew, Close) and the claims read
// the rows without locking them (ownerLeasesCTE is a WITH query, which
// FOR UPDATE does not lock), so no claim waits on one. Prune deletes those
// of dead owners (no owner lock) expired for ownerKeep that hold nothing.

// rowLease is the lease_until a handle writes into the rows it accepts,
// stores or takes over: their lease is its owner row's.
const rowLease = `'infinity'::timestamptz`

// ownerKeep is how long after its lease ran out the row of a dead owner
// that holds nothing is kept (a day, as completed ids: sessions.DoneRetention).
const ownerKeep = 24 * time.Hour

// ownerLeasesCTE reads the owners' leases once per statement. As a WITH
// query it is not locked by the FOR UPDATE of the statements using it.
const ownerLeasesCTE = `owners AS MATERIALIZED (SELECT owner, lease_until FROM delivery_owners)`

// leaseRanOut is the condition that a row's lease ran out at now (an SQL
// expression), under ownerLeasesCTE: its owner's lease when the owner has
// a row, else ownExpired, the condition on the row's own lease_until.
func leaseRanOut(now, ownExpired string) string {
	return `(owner IN (SELECT owner FROM owners WHERE lease_until <= ` + now + `)
		OR (` + ownExpired + ` AND owner NOT IN (SELECT owner FROM owners)))`
}

// renewOwnerSQL writes handle $1's lease, until $2.
const renewOwnerSQL = `INSERT INTO delivery_owners (owner, lease_until) VALUES ($1, $2)
	ON CONFLICT (owner) DO UPDATE SET lease_until = excluded.lease_until`

// Renew extends the lease of the pending records and replies this handle
// holds: one row, its owner row, however many they are. The handle's
// constructor calls it before anything is accepted, the loop every
// Lease/3.
func (d *Delivery) Renew(ctx context.Context) error {
	if _, err := d.db.pool.Exec(ctx, renewOwnerSQL, d.owner, d.clock().Add(d.lease)); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil // the caller gave up; the next renewal writes it
		}
		return fmt.Errorf("pgstore: delivery renew: %w", err)
	}
	d.ownerRow.Store(true)
	return nil
}

// ensureOwnerRow writes this handle's owner row unless a renewal did:
// rows written with rowLease before it exists would be leased by nothing
// but the owner lock. It costs a round trip only until the first renewal
// succeeds (the one at open failed: the server was out of reach).
func (d *Delivery) ensureOwnerRow(ctx context.Context) error {
	if d.ownerRow.Load() {
		return nil
	}
	return d.Renew(withOp(ctx, OpRenew))
}

// pruneOwnersSQL deletes the owner rows whose lease ran out before $1,
// whose owner is dead (its lock is not held: a stopped or cut-off handle
// keeps its row) and that hold no pending record and no reply. The owner
// rows are few (the live handles and those of a day's restarts); the
// pending records and the replies are read only when one of them is a
// candidate, about once a dead handle: EXISTS (SELECT FROM old) is a
// one-time filter over the whole statement (without it the planner
// filtered every owner row by the pending set before joining the
// candidates, reading every pending record each minute).
const pruneOwnersSQL = `WITH ` + liveOwnersCTE + `,
	old AS MATERIALIZED (SELECT owner FROM delivery_owners
		WHERE lease_until < $1 AND hashtextextended(owner, 0) NOT IN (SELECT k FROM live))
	DELETE FROM delivery_owners WHERE EXISTS (SELECT FROM old) AND owner IN (SELECT owner FROM old)
		AND owner NOT IN (SELECT owner FROM delivery_records WHERE state = 'pending' AND owner IN (SELECT owner FROM old))
		AND owner NOT IN (SELECT owner FROM delivery_replies WHERE owner IN (SELECT owner FROM old))`

// pruneOwners deletes the rows of dead owners expired for ownerKeep that
// hold nothing.
func (d *Delivery) pruneOwners(ctx context.Context) error {
	if _, err := d.db.pool.Exec(ctx, pruneOwnersSQL, d.clock().Add(-ownerKeep)); err != nil {
		return fmt.Errorf("pgstore: delivery prune owners: %w", err)
	}
	return nil
}
