package gatewayd

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/sessions"
)

// What the daemon is doing, in one answer (issue 25: `gateway status`, GET
// /api/status). Each part reads the state where it lives — the channel
// adapters' connections, the providers' breakers, the MCP manager, the
// lanes and the dispatcher, the journal, the storage backend and, on a
// shared database, the replicas and leader roles — through the small
// read-only methods they export; nothing here keeps state of its own but
// the leader roles an adapter runs under (leader.go) and adapters that
// stopped.

// Overall verdicts of a Status.
const (
	// StatusOK: nothing is failing or recovering.
	StatusOK = "ok"
	// StatusDegraded: something recovers by itself (a channel
	// reconnecting or connecting, a provider's breaker half-open, an MCP
	// server starting) or work waits (unclaimed ingress).
	StatusDegraded = "degraded"
	// StatusFailing: something is failing (a channel account failing, a
	// provider's breaker open, an MCP server down, storage that does not
	// take writes).
	StatusFailing = "failing"
)

// ConnStandby is the state of a singleton channel account whose leader
// role another replica holds: it receives there, not here.
const ConnStandby channels.ConnState = "standby"

// statusTop is how many sessions Status lists by queue length.
const statusTop = 10

// statusTimeout bounds the storage probes of one Status.
const statusTimeout = 3 * time.Second

// Status is the daemon's state for `gateway status` and GET /api/status.
type Status struct {
	// Overall is ok, degraded or failing; Problems says why, one line each
	// (empty when ok).
	Overall   string    `json:"overall"`
	Problems  []string  `json:"problems"`
	CheckedAt time.Time `json:"checkedAt"`
	StartedAt time.Time `json:"startedAt"`

	Channels  []ChannelStatus         `json:"channels"`
	Providers []agents.ProviderStatus `json:"providers"`
	Fallbacks []agents.Fallback       `json:"fallbacks"`
	MCP       []mcp.Status            `json:"mcp"`
	Lanes     LanesStatus             `json:"lanes"`
	Delivery  DeliveryStatus          `json:"delivery"`
	Storage   StorageStatus           `json:"storage"`
	// Replicas is set on a backend several replicas share.
	Replicas *ReplicasStatus `json:"replicas,omitempty"`
}

// ChannelStatus is one channel account.
type ChannelStatus struct {
	Channel string `json:"channel"`
	Account string `json:"account"`
	channels.Connection
	// Role is the leader role the account runs under on a shared backend
	// ("telegram:<account>"), and Leader the replica holding it (when
	// State is standby: another one).
	Role   string `json:"role,omitempty"`
	Leader string `json:"leader,omitempty"`
	dispatch.Traffic
}

// LanesStatus is the lanes' runs and queues.
type LanesStatus struct {
	Running map[string]int `json:"running"`
	Caps    map[string]int `json:"caps"`
	// Queued items over all sessions; Waiting sessions wait for a slot.
	Queued  int            `json:"queued"`
	Waiting int            `json:"waiting"`
	Busy    int            `json:"busySessions"`
	Top     []SessionQueue `json:"top"`
}

// SessionQueue is one session of LanesStatus.Top.
type SessionQueue struct {
	SessionKey string    `json:"sessionKey"`
	Queued     int       `json:"queued"`
	Running    bool      `json:"running"`
	Oldest     time.Time `json:"oldest"`
}

// DeliveryStatus is the journal and the outbox.
type DeliveryStatus struct {
	// Pending records have no outcome yet; Replies are stored and not
	// completely delivered.
	Pending       int   `json:"pending"`
	Replies       int   `json:"replies"`
	WriteFailures int64 `json:"writeFailures"`
	// GivenUp counts messages and replies given up since the start, by
	// reason; GivenUpTotal is their sum.
	GivenUp      map[string]int64 `json:"givenUp"`
	GivenUpTotal int64            `json:"givenUpTotal"`
	// DeadLetters counts what is kept of them for the operator (`gateway
	// deliveries list --failed`), -1 when the store could not be read.
	DeadLetters int `json:"deadLetters"`
}

// StorageStatus is the backend's probe and whether the journal takes
// writes.
type StorageStatus struct {
	sessions.BackendStatus
	Healthy      bool   `json:"healthy"`
	JournalError string `json:"journalError,omitempty"`
}

// ReplicasStatus is this replica's view of the replicas sharing the
// database.
type ReplicasStatus struct {
	ReplicaID string `json:"replicaId"`
	// Error is why the database could not be read ("" when it was).
	Error    string          `json:"error,omitempty"`
	Replicas []ReplicaInfo   `json:"replicas"`
	Leaders  []LeaderInfo    `json:"leaders"`
	Ingress  IngressLagState `json:"ingress"`
}

// ReplicaInfo is one registered replica.
type ReplicaInfo struct {
	ID        string    `json:"id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"startedAt"`
	SeenAt    time.Time `json:"seenAt"`
	Stale     bool      `json:"stale"`
}

// LeaderInfo is one leader role held now.
type LeaderInfo struct {
	Role      string    `json:"role"`
	Holder    string    `json:"holder"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// IngressLagState is the accepted ingress nobody works on.
type IngressLagState struct {
	Unclaimed int           `json:"unclaimed"`
	OldestAge time.Duration `json:"oldestAgeNs"`
}

// adapterState is what the daemon itself knows of a running adapter: its
// leader role and whether it leads, and the error its Run returned.
type adapterState struct {
	leading atomic.Bool
	mu      sync.Mutex // guards role and stopped
	role    string
	stopped error
}

// adapterStates holds an adapterState per account; safe for concurrent use.
type adapterStates struct{ m sync.Map }

func (s *adapterStates) of(k channels.AccountKey) *adapterState {
	v, _ := s.m.LoadOrStore(k, &adapterState{})
	return v.(*adapterState)
}

func (s *adapterStates) get(k channels.AccountKey) (*adapterState, bool) {
	v, ok := s.m.Load(k)
	if !ok {
		return nil, false
	}
	return v.(*adapterState), true
}

// Status gathers the daemon's state. It is safe for concurrent use once
// Run has assembled the daemon; storage probes are bounded by
// statusTimeout.
func (d *Daemon) Status(ctx context.Context) Status {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st := Status{CheckedAt: time.Now().UTC(), StartedAt: d.startedAt, Problems: []string{}}
	ds := d.disp.Status(statusTop)
	st.Replicas = d.replicasStatus(ctx)
	st.Channels = d.channelsStatus(ds.Traffic, st.Replicas)
	st.Providers, st.Fallbacks = d.runner.ProviderStatus(), d.runner.Fallbacks()
	st.MCP = d.mcp.Status()
	st.Lanes = lanesStatus(ds)
	js := d.backend.Journal().Stats()
	st.Delivery = DeliveryStatus{Pending: js.Pending, Replies: js.Replies, WriteFailures: js.WriteFailures, GivenUp: ds.GivenUp}
	for _, n := range ds.GivenUp {
		st.Delivery.GivenUpTotal += n
	}
	st.Delivery.DeadLetters = -1
	if ls, err := d.backend.DeadLetters().DeadLetters(ctx); err == nil {
		st.Delivery.DeadLetters = len(ls)
	}
	st.Storage = StorageStatus{BackendStatus: d.backend.Status(ctx)}
	if err := d.backend.Journal().Health(); err != nil {
		st.Storage.JournalError = err.Error()
	}
	st.Storage.Healthy = st.Storage.Err == "" && st.Storage.JournalError == ""
	st.judge()
	return st
}

// channelsStatus is every adapter's connection, leader role and traffic.
func (d *Daemon) channelsStatus(traffic map[channels.AccountKey]dispatch.Traffic, rs *ReplicasStatus) []ChannelStatus {
	out := make([]ChannelStatus, 0, len(d.adapters))
	for _, a := range d.adapters {
		k := channels.AccountOf(a)
		cs := ChannelStatus{Channel: k.Channel, Account: k.AccountID, Traffic: traffic[k]}
		if r, ok := a.(channels.ConnReporter); ok {
			cs.Connection = r.Connection()
		} else {
			// Served by the HTTP API (the web chat): up while it is.
			cs.Connection = channels.Connection{State: channels.ConnConnected, Mode: "http", Since: d.startedAt}
		}
		if as, ok := d.adapterStates.get(k); ok {
			as.mu.Lock()
			stopped, role := as.stopped, as.role
			as.mu.Unlock()
			cs.Role = role
			switch {
			case stopped != nil:
				cs.State, cs.LastError = channels.ConnFailing, "stopped: "+stopped.Error()
			case role != "" && !as.leading.Load():
				cs.State = ConnStandby
			}
			if rs != nil && role != "" {
				for _, l := range rs.Leaders {
					if l.Role == role {
						cs.Leader = l.Holder
					}
				}
			}
		}
		out = append(out, cs)
	}
	return out
}

func lanesStatus(ds dispatch.Status) LanesStatus {
	ls := LanesStatus{Running: map[string]int{}, Caps: map[string]int{}, Queued: ds.Lanes.Queued,
		Waiting: ds.Lanes.Waiting, Busy: ds.Lanes.Keys, Top: []SessionQueue{}}
	for c, n := range ds.Lanes.Running {
		ls.Running[string(c)] = n
	}
	for c, n := range ds.Lanes.Caps {
		ls.Caps[string(c)] = n
	}
	for _, t := range ds.Lanes.Top {
		ls.Top = append(ls.Top, SessionQueue{SessionKey: t.Key.String(), Queued: t.Queued, Running: t.Running, Oldest: t.Oldest})
	}
	return ls
}

// judge sets Overall and Problems from the parts.
func (st *Status) judge() {
	failing, degraded := false, false
	fail := func(format string, args ...any) {
		failing = true
		st.Problems = append(st.Problems, fmt.Sprintf(format, args...))
	}
	warn := func(format string, args ...any) {
		degraded = true
		st.Problems = append(st.Problems, fmt.Sprintf(format, args...))
	}
	for _, c := range st.Channels {
		switch c.State {
		case channels.ConnFailing:
			fail("channel %s/%s failing since %s: %s", c.Channel, c.Account, c.Since.UTC().Format(time.RFC3339), c.LastError)
		case channels.ConnReconnecting:
			warn("channel %s/%s reconnecting since %s: %s", c.Channel, c.Account, c.Since.UTC().Format(time.RFC3339), c.LastError)
		case channels.ConnConnecting:
			warn("channel %s/%s connecting", c.Channel, c.Account)
		}
	}
	for _, p := range st.Providers {
		switch p.Breaker.State {
		case agents.BreakerOpen:
			fail("provider %s: circuit breaker open until %s: %s", p.Name, p.Breaker.OpenUntil.UTC().Format(time.RFC3339), p.Breaker.LastError)
		case agents.BreakerHalfOpen:
			warn("provider %s: circuit breaker half-open (next call is the trial): %s", p.Name, p.Breaker.LastError)
		}
	}
	for _, m := range st.MCP {
		switch m.State {
		case mcp.StateRestarting:
			fail("MCP server %s down (%d restarts): %s", m.Name, m.Restarts, m.Error)
		case mcp.StateStarting:
			warn("MCP server %s starting", m.Name)
		}
	}
	if st.Storage.Err != "" {
		fail("storage %s does not answer: %s", st.Storage.Kind, st.Storage.Err)
	}
	if st.Storage.JournalError != "" {
		fail("ingress journal takes no writes: %s", st.Storage.JournalError)
	}
	if r := st.Replicas; r != nil {
		if r.Error != "" {
			fail("replicas: database not readable: %s", r.Error)
		}
		if r.Ingress.Unclaimed > 0 {
			warn("%d accepted messages unclaimed (oldest %s)", r.Ingress.Unclaimed, r.Ingress.OldestAge.Round(time.Second))
		}
	}
	switch {
	case failing:
		st.Overall = StatusFailing
	case degraded:
		st.Overall = StatusDegraded
	default:
		st.Overall = StatusOK
	}
}
