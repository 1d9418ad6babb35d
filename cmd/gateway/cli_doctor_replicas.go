package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// leaseReport is a lease held now, as doctor shows it.
type leaseReport struct {
	Name   string        `json:"name"`
	Holder string        `json:"holder"`
	Token  int64         `json:"token"`
	Left   time.Duration `json:"left"`
}

// replicaLister is what a backend shared by several replicas (postgres)
// tells doctor about them.
type replicaLister interface {
	Replicas(ctx context.Context) ([]pgstore.Replica, error)
	Leases(ctx context.Context) ([]pgstore.Lease, error)
	IngressLag(ctx context.Context) (pgstore.IngressLag, error)
}

var _ replicaLister = (*pgstore.Backend)(nil)

// unclaimedWarnAge is the age of the oldest unclaimed message past which
// doctor says that no running replica seems to take them over (one does
// within seconds).
const unclaimedWarnAge = time.Minute

// addReplicas fills the replicas, the leases and the ingress lag of a
// backend that has them, and the replica id the config sets; a failure to
// read them is the storage's error.
func (s *storageReport) addReplicas(ctx context.Context, b sessions.Backend, replicaID string) {
	rl, ok := b.(replicaLister)
	if !ok {
		return
	}
	s.ReplicaID = replicaID
	err := s.readReplicas(ctx, rl)
	if err != nil {
		s.Reachable, s.Err = false, oneLine(err.Error())
	}
}

func (s *storageReport) readReplicas(ctx context.Context, rl replicaLister) error {
	reps, err := rl.Replicas(ctx)
	if err != nil {
		return err
	}
	ls, err := rl.Leases(ctx)
	if err != nil {
		return err
	}
	lag, err := rl.IngressLag(ctx)
	if err != nil {
		return err
	}
	s.Replicas, s.Ingress = reps, &lag
	for _, l := range ls {
		s.Leases = append(s.Leases, leaseReport{Name: l.Name, Holder: l.Holder, Token: l.Token, Left: l.Remaining()})
	}
	if s.Replicas == nil {
		s.Replicas = []pgstore.Replica{}
	}
	return nil
}

// heldBy is what one holder holds: its leader roles, listed, and its
// session leases, counted (a replica may hold thousands).
type heldBy struct {
	roles    []string
	sessions int
}

func (h heldBy) String() string {
	var parts []string
	if len(h.roles) > 0 {
		parts = append(parts, strings.Join(h.roles, ", "))
	}
	if h.sessions > 0 {
		parts = append(parts, fmt.Sprintf("%d session lease(s)", h.sessions))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// printReplicas writes the replica id the config sets, one line per
// replica with the leases it holds, one per holder of leases that is not
// registered, and the lag of unclaimed ingress.
func printReplicas(w io.Writer, s storageReport) {
	if s.Replicas == nil {
		return
	}
	if s.ReplicaID != "" {
		fmt.Fprintf(w, "storage: this config's replica id: %s\n", s.ReplicaID)
	} else {
		fmt.Fprintf(w, "storage: this config sets no replica id (storage.postgres.replicaId): each start of the daemon takes a new one\n")
	}
	fmt.Fprintf(w, "storage: %d replica(s) registered\n", len(s.Replicas))
	held := map[string]*heldBy{}
	var holders []string
	for _, l := range s.Leases {
		who := pgstore.LeaseReplica(l.Name, l.Holder) // a session lease's holder is "<replica>/<owner>"
		h := held[who]
		if h == nil {
			h = &heldBy{}
			held[who] = h
			holders = append(holders, who)
		}
		if pgstore.IsSessionLease(l.Name) {
			h.sessions++
			continue
		}
		h.roles = append(h.roles, fmt.Sprintf("%s (token %d, %s left)", l.Name, l.Token, l.Left.Round(100*time.Millisecond)))
	}
	for _, r := range s.Replicas {
		state := "live"
		if r.Stale() {
			state = "STALE"
		}
		leases := heldBy{}
		if h := held[r.ID]; h != nil {
			leases = *h
		}
		delete(held, r.ID)
		this := ""
		if r.ID == s.ReplicaID {
			this = " (this config)"
		}
		fmt.Fprintf(w, "replica %s%s: %s, host %s pid %d version %s, started %s, seen %s ago; leases: %s\n",
			r.ID, this, state, r.Host, r.PID, r.Version, r.StartedAt.Local().Format(time.DateTime), r.Age.Round(time.Second), leases)
	}
	for _, holder := range holders {
		if h, orphan := held[holder]; orphan {
			fmt.Fprintf(w, "leases held by unregistered replica %s: %s\n", holder, h)
		}
	}
	printIngressLag(w, s.Ingress)
}

// printIngressLag writes the lag of unclaimed ingress.
func printIngressLag(w io.Writer, lag *pgstore.IngressLag) {
	switch {
	case lag == nil:
	case lag.Unclaimed == 0:
		fmt.Fprintf(w, "storage: unclaimed ingress: none\n")
	default:
		note := ""
		if lag.OldestAge > unclaimedWarnAge {
			note = " (a running replica takes such messages over within seconds: is any replica running?)"
		}
		fmt.Fprintf(w, "storage: unclaimed ingress: %d message(s) whose owner died or stopped, the oldest accepted %s ago%s\n",
			lag.Unclaimed, lag.OldestAge.Round(time.Second), note)
	}
}
