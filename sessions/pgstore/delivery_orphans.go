package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Orphans: rows whose owner handle is dead (its advisory lock is gone:
// the process died, or closed its handle) are taken over by the first
// handle that asks, in the statement that reads them (FOR UPDATE SKIP
// LOCKED), so two replicas never both take one.

// liveOwnersCTE lists the keys of the owner locks held in this database
// (see ownerAliveSQL for the encoding), read once per statement.
const liveOwnersCTE = `live AS MATERIALIZED (
		SELECT (l.classid::int8 << 32) | l.objid::int8 AS k FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`

// orphanOwner is the condition on a row's owner column: another handle's,
// and that handle is dead.
const orphanOwner = `owner <> $1 AND hashtextextended(owner, 0) NOT IN (SELECT k FROM live)`

// orphanLeased is orphanOwner for rows with a lease (records and replies):
// also those of a live handle whose lease ran out by $3 (leaseRanOut, under
// ownerLeasesCTE: its process is stopped or cut off from the database and
// no longer renews its owner row; should it come back, its session leases
// are gone too and fence its writes).
var orphanLeased = `owner <> $1 AND (hashtextextended(owner, 0) NOT IN (SELECT k FROM live) OR ` +
	leaseRanOut("$3", "lease_until <= $3") + `)`

var _ sessions.Orphans = (*Delivery)(nil)

// Orphans takes over the pending records (not answered by a reply) and the
// replies not completely delivered whose owner handle is dead, oldest
// first, leasing them to this handle. Until a reply taken over is marked
// sent, its session's turns are not held (BeginTurn): the caller sends it
// outside its session's turns. A running replica calls it
// periodically (dispatch) to resume the work of one that died or stopped;
// it returns nothing while this handle does not hold its own owner lock
// (it could not be told apart from a dead one then).
func (d *Delivery) Orphans(ctx context.Context) ([]sessions.Record, []sessions.Reply, error) {
	ctx = withOp(ctx, OpClaim)
	recs, err := d.claimOrphanRecords(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("pgstore: delivery orphans: %w", err)
	}
	// The replies taken over are noted before any BeginTurn may see them
	// as this handle's (turns_adopted.go).
	d.taken.claim.Lock()
	defer d.taken.claim.Unlock()
	reps, err := d.claimOrphanReplies(ctx, false)
	if err != nil {
		return recs, nil, fmt.Errorf("pgstore: delivery orphans: %w", err)
	}
	d.taken.note(reps)
	return recs, reps, nil
}

// releasedDeliveryChannel is the LISTEN/NOTIFY channel on which Close
// announces that a handle's rows are free to take over.
const releasedDeliveryChannel = "gateway_delivery_released"

// WaitOrphans sleeps for d, or until a handle closes (a notification on
// releasedDeliveryChannel, heard by the handle's listening connection,
// turns_wait.go; one heard since the last wait ends this one at once), or
// ctx ends.
func (d *Delivery) WaitOrphans(ctx context.Context, wait time.Duration) {
	d.waiters.waitOrphans(ctx, d.db, wait)
}

// ownLock makes sure this handle holds its owner lock before it takes
// anything over: rows it takes are then its own, invisible to others. It
// returns the condition that gates taking over: that the lock is live in
// the server (its connection may have ended since hold checked it), or
// "false" while it is not settled (found lost within the grace:
// ownerLock.settled). When it is false the claims return only what this
// handle already holds.
func (d *Delivery) ownLock(ctx context.Context) (gate string, err error) {
	if d.isClosed.Load() {
		return "", errClosed
	}
	if err := d.lock.hold(ctx); err != nil {
		return "", fmt.Errorf("%w: %w", errNoOwnerLock, err)
	}
	if !d.lock.settled() {
		return "false", nil
	}
	return "hashtextextended($1, 0) IN (SELECT k FROM live)", nil
}

// claimOrphanRecords takes over the pending, unanswered records of dead
// owners; the records of again (taken over before) that are still pending
// and this handle's are returned with them. Oldest first.
func (d *Delivery) claimOrphanRecords(ctx context.Context, again []string) ([]sessions.Record, error) {
	gate, err := d.ownLock(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.ensureOwnerRow(ctx); err != nil {
		return nil, err
	}
	rows, err := d.db.pool.Query(ctx, `WITH `+liveOwnersCTE+`, `+ownerLeasesCTE+`, c AS (
			UPDATE delivery_records r SET owner = $1, lease_until = `+rowLease+`
			FROM (SELECT id FROM delivery_records
				WHERE `+gate+` AND state = 'pending' AND reply IS NULL AND `+orphanLeased+`
				ORDER BY seq FOR UPDATE SKIP LOCKED) o
			WHERE r.id = o.id RETURNING r.id)
		SELECT seq, `+recordCols+` FROM delivery_records
		WHERE id IN (SELECT id FROM c)
			OR (id = ANY($2) AND owner = $1 AND state = 'pending' AND reply IS NULL)
		ORDER BY seq`, d.owner, again, d.clock())
	if err != nil {
		return nil, err
	}
	return collectSeqRecords(rows)
}

// claimOrphanReplies takes over the replies of dead owners; with own, this
// handle's replies are returned too. Oldest first.
func (d *Delivery) claimOrphanReplies(ctx context.Context, own bool) ([]sessions.Reply, error) {
	gate, err := d.ownLock(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.ensureOwnerRow(ctx); err != nil {
		return nil, err
	}
	rows, err := d.db.pool.Query(ctx, `WITH `+liveOwnersCTE+`, `+ownerLeasesCTE+`, c AS (
			UPDATE delivery_replies r SET owner = $1, lease_until = `+rowLease+`
			FROM (SELECT id FROM delivery_replies WHERE `+gate+` AND `+orphanLeased+`
				ORDER BY seq FOR UPDATE SKIP LOCKED) o
			WHERE r.id = o.id RETURNING r.id)
		SELECT `+replyCols+` FROM delivery_replies
		WHERE id IN (SELECT id FROM c) OR ($2 AND owner = $1) ORDER BY seq`,
		d.owner, own, d.clock())
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanReply)
	d.noteChunks(out...)
	return out, err
}

// claimOrphanDrafts takes over the drafts of dead owners; the drafts of
// again (taken over before) still recorded as this handle's are returned
// with them. Oldest first.
func (d *Delivery) claimOrphanDrafts(ctx context.Context, again []string) ([]sessions.Draft, error) {
	gate, err := d.ownLock(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := d.db.pool.Query(ctx, `WITH `+liveOwnersCTE+`, c AS (
			UPDATE delivery_drafts r SET owner = $1
			FROM (SELECT id FROM delivery_drafts WHERE `+gate+` AND `+orphanOwner+`
				ORDER BY seq FOR UPDATE SKIP LOCKED) o
			WHERE r.id = o.id RETURNING r.id)
		SELECT id, session_key, target::text, message_id, created_at FROM delivery_drafts
		WHERE id IN (SELECT id FROM c) OR (id = ANY($2) AND owner = $1) ORDER BY seq`, d.owner, again)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDraft)
}

// adoption remembers what Pending and Drafts took over, so that they
// return it again (they read; a second call returns the same) while it is
// pending, unlike what this handle accepted or recorded itself.
type adoption struct {
	mu              sync.Mutex
	records, drafts map[string]bool
}

// Kinds of adopted ids.
const (
	adoptedRecords = false
	adoptedDrafts  = true
)

func (a *adoption) set(drafts bool) *map[string]bool {
	if drafts {
		return &a.drafts
	}
	return &a.records
}

// list returns the adopted ids of a kind.
func (a *adoption) list(drafts bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	set := *a.set(drafts)
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	return out
}

// reset makes the ids of a kind those returned by the last call.
func (a *adoption) reset(drafts bool, ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	*a.set(drafts) = set
}

// forget drops finished ids of a kind.
func (a *adoption) forget(drafts bool, ids ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		delete(*a.set(drafts), id)
	}
}
