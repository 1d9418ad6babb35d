package gatewayd

import (
	"context"
	"strings"

	"github.com/gateway/gateway/sessions/pgstore"
)

// replicaLister is a backend shared by replicas that lists them and the
// leases held (pgstore.Backend).
type replicaLister interface {
	replicaStatuser
	ReplicaID() string
	Replicas(ctx context.Context) ([]pgstore.Replica, error)
	Leases(ctx context.Context) ([]pgstore.Lease, error)
}

// replicasStatus reads the replicas, the leader roles held and the
// unclaimed ingress from the shared database; nil on a backend that is not
// shared (files). A database that does not answer is reported in Error.
func (d *Daemon) replicasStatus(ctx context.Context) *ReplicasStatus {
	b, ok := d.backend.(replicaLister)
	if !ok {
		return nil
	}
	rs := &ReplicasStatus{ReplicaID: b.ReplicaID(), Replicas: []ReplicaInfo{}, Leaders: []LeaderInfo{}}
	fail := func(err error) *ReplicasStatus {
		rs.Error = err.Error()
		return rs
	}
	reps, err := b.Replicas(ctx)
	if err != nil {
		return fail(err)
	}
	for _, r := range reps {
		rs.Replicas = append(rs.Replicas, ReplicaInfo{ID: r.ID, Host: r.Host, PID: r.PID, Version: r.Version,
			StartedAt: r.StartedAt, SeenAt: r.SeenAt, Stale: r.Stale()})
	}
	leases, err := b.Leases(ctx)
	if err != nil {
		return fail(err)
	}
	for _, l := range leases {
		if pgstore.IsSessionLease(l.Name) || !strings.Contains(l.Name, ":") {
			continue
		}
		rs.Leaders = append(rs.Leaders, LeaderInfo{Role: l.Name, Holder: l.Holder, ExpiresAt: l.ExpiresAt})
	}
	lag, err := b.ReplicaStatus(ctx)
	if err != nil {
		return fail(err)
	}
	rs.Ingress = IngressLagState{Unclaimed: lag.Ingress.Unclaimed, OldestAge: lag.Ingress.OldestAge}
	return rs
}
