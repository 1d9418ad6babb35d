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
}

var _ replicaLister = (*pgstore.Backend)(nil)

// addReplicas fills the replicas and the leases of a backend that has
// them; a failure to read them is the storage's error.
func (s *storageReport) addReplicas(ctx context.Context, b sessions.Backend) {
	rl, ok := b.(replicaLister)
	if !ok {
		return
	}
	reps, err := rl.Replicas(ctx)
	if err == nil {
		var ls []pgstore.Lease
		if ls, err = rl.Leases(ctx); err == nil {
			s.Replicas = reps
			for _, l := range ls {
				s.Leases = append(s.Leases, leaseReport{Name: l.Name, Holder: l.Holder, Token: l.Token, Left: l.Remaining()})
			}
			if s.Replicas == nil {
				s.Replicas = []pgstore.Replica{}
			}
			return
		}
	}
	s.Reachable, s.Err = false, oneLine(err.Error())
}

// printReplicas writes one line per replica, with the leases it holds, and
// one per lease whose holder is not registered.
func printReplicas(w io.Writer, s storageReport) {
	if s.Replicas == nil {
		return
	}
	fmt.Fprintf(w, "storage: %d replica(s) registered\n", len(s.Replicas))
	held := map[string][]string{}
	for _, l := range s.Leases {
		held[l.Holder] = append(held[l.Holder], fmt.Sprintf("%s (token %d, %s left)", l.Name, l.Token, l.Left.Round(100*time.Millisecond)))
	}
	for _, r := range s.Replicas {
		state := "live"
		if r.Stale() {
			state = "STALE"
		}
		leases := "none"
		if h := held[r.ID]; len(h) > 0 {
			leases = strings.Join(h, ", ")
		}
		delete(held, r.ID)
		fmt.Fprintf(w, "replica %s: %s, host %s pid %d version %s, started %s, seen %s ago; leases: %s\n",
			r.ID, state, r.Host, r.PID, r.Version, r.StartedAt.Local().Format(time.DateTime), r.Age.Round(time.Second), leases)
	}
	for _, l := range s.Leases {
		if _, orphan := held[l.Holder]; orphan {
			fmt.Fprintf(w, "lease %s: held by unregistered replica %s (token %d, %s left)\n", l.Name, l.Holder, l.Token, l.Left.Round(100*time.Millisecond))
		}
	}
}
