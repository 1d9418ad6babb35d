package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// What a replica shows of the work the replicas share (issue 13), for its
// /metrics and gateway doctor: the leases it holds and the ingress nobody
// works on. One statement, cheap enough for every scrape.

// IsSessionLease reports whether lease name is a per-session lease
// (SessionLease) rather than a leader role ("telegram:<account>",
// "discord:<account>").
func IsSessionLease(name string) bool { return strings.HasPrefix(name, SessionLease("")) }

// LeaseReplica is the replica that holds lease name under holder: a
// leader role's holder is the replica id, a session lease's is the
// replica id and its Delivery handle's owner id ("<replica>/<owner>",
// turns.go; the owner id has no '/', a replica id may).
func LeaseReplica(name, holder string) string {
	if i := strings.LastIndexByte(holder, '/'); i >= 0 && IsSessionLease(name) {
		return holder[:i]
	}
	return holder
}

// IngressLag is the accepted ingress nobody works on: pending, unanswered
// delivery records whose owner is dead (its advisory lock is gone) or whose
// lease ran out (the owner stopped renewing: it hangs or is paused). A
// running replica takes them over within seconds; a lag that grows says
// none does.
type IngressLag struct {
	// Unclaimed is how many such records there are.
	Unclaimed int `json:"unclaimed"`
	// OldestAge is the age of the oldest of them by the database's clock
	// since it was accepted; 0 when there is none.
	OldestAge time.Duration `json:"oldestAge"`
}

// ReplicaStatus is one replica's view of the shared work.
type ReplicaStatus struct {
	// ReplicaID is the replica's id: the holder of its leases.
	ReplicaID string `json:"replicaId"`
	// LeaderRoles are the leader roles it holds now, by name.
	LeaderRoles []string `json:"leaderRoles"`
	// SessionLeases is how many per-session leases it holds now (counted:
	// there may be thousands).
	SessionLeases int `json:"sessionLeases"`
	// Ingress is the lag of unclaimed ingress (every replica's records).
	Ingress IngressLag `json:"ingress"`
}

// replicaStatusSQL reads the leases replica $1 holds (its leader roles
// under its id, its session leases under "<id>/<owner>") and the
// unclaimed ingress: the rows the take-over loop would take (orphanLeased).
// A record's lease (its owner row's, leaseRanOut) is written by its
// owner's clock and compared with the database's: replicas' clocks are
// assumed in step (NTP) here, as for the take-over of delivery records.
var replicaStatusSQL = `WITH ` + liveOwnersCTE + `, ` + ownerLeasesCTE + `,
	held AS (SELECT name FROM leases
		WHERE expires_at > clock_timestamp() AND CASE WHEN name LIKE $2 || '%'
			THEN regexp_replace(holder, '/[^/]*$', '') = $1 ELSE holder = $1 END),
	unclaimed AS (SELECT accepted_at FROM delivery_records
		WHERE state = 'pending' AND reply IS NULL
			AND (hashtextextended(owner, 0) NOT IN (SELECT k FROM live)
				OR ` + leaseRanOut("clock_timestamp()", "lease_until <= clock_timestamp()") + `))
	SELECT
		coalesce((SELECT array_agg(name ORDER BY name) FROM held WHERE name NOT LIKE $2 || '%'), '{}'),
		(SELECT count(*) FROM held WHERE name LIKE $2 || '%'),
		(SELECT count(*) FROM unclaimed),
		coalesce((SELECT (extract(epoch FROM greatest(clock_timestamp() - min(accepted_at), interval '0')) * 1000000)::bigint
			FROM unclaimed), 0)`

// ReplicaStatus reads this replica's leases and the lag of unclaimed
// ingress in one statement.
func (b *Backend) ReplicaStatus(ctx context.Context) (ReplicaStatus, error) {
	ctx = withOp(ctx, OpReplica)
	st := ReplicaStatus{ReplicaID: b.rep.id}
	var age int64
	err := b.db.pool.QueryRow(ctx, replicaStatusSQL, b.rep.id, SessionLease("")).
		Scan(&st.LeaderRoles, &st.SessionLeases, &st.Ingress.Unclaimed, &age)
	if err != nil {
		return ReplicaStatus{ReplicaID: b.rep.id}, fmt.Errorf("pgstore: replica status: %w", err)
	}
	st.Ingress.OldestAge = time.Duration(age) * time.Microsecond
	return st, nil
}

// IngressLag reads the lag of unclaimed ingress alone (gateway doctor,
// which is no replica).
func (b *Backend) IngressLag(ctx context.Context) (IngressLag, error) {
	ctx = withOp(ctx, OpReplica)
	st, err := b.ReplicaStatus(ctx)
	if err != nil {
		return IngressLag{}, fmt.Errorf("pgstore: ingress lag: %w", err)
	}
	return st.Ingress, nil
}
