package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// What the dispatcher shows of its work for `gateway status` (issue 25):
// when each account last received and delivered a message, how many
// messages and replies it gave up since it started, and the lanes. All of
// it is read without touching storage.

// Traffic is when an account last received a message (one the dispatcher
// was handed, accepted or not) and last had a reply chunk delivered.
type Traffic struct {
	LastInbound  time.Time `json:"lastInbound,omitzero"`
	LastOutbound time.Time `json:"lastOutbound,omitzero"`
}

// traffic records Traffic per account; safe for concurrent use.
type traffic struct {
	mu sync.Mutex // guards by
	by map[channels.AccountKey]Traffic
}

func (t *traffic) inbound(channel, account string, at time.Time) {
	t.update(channel, account, func(tr *Traffic) { tr.LastInbound = at })
}

func (t *traffic) outbound(channel, account string, at time.Time) {
	t.update(channel, account, func(tr *Traffic) { tr.LastOutbound = at })
}

func (t *traffic) update(channel, account string, f func(*Traffic)) {
	if channel == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[channels.AccountKey]Traffic{}
	}
	k := channels.AccountKey{Channel: channel, AccountID: account}
	tr := t.by[k]
	f(&tr)
	t.by[k] = tr
}

func (t *traffic) snapshot() map[channels.AccountKey]Traffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[channels.AccountKey]Traffic, len(t.by))
	for k, v := range t.by {
		out[k] = v
	}
	return out
}

// Status is the dispatcher's part of `gateway status`.
type Status struct {
	// Traffic is per account (channel and account id).
	Traffic map[channels.AccountKey]Traffic
	// GivenUp counts the messages and replies given up since the
	// dispatcher was built, by reason (the labels of
	// gateway_messages_given_up_total).
	GivenUp map[string]int64
	// Lanes are the lanes' runs and queues, with the top sessions by
	// queue.
	Lanes lanes.Snapshot[routing.Key]
}

// Status returns what the dispatcher does now, with at most top sessions
// in Lanes.Top. It is safe for concurrent use.
func (d *Dispatcher) Status(top int) Status {
	st := Status{Traffic: d.traffic.snapshot(), GivenUp: map[string]int64{}, Lanes: d.queue.Snapshot(top)}
	d.givenUp.Range(func(k, v any) bool {
		st.GivenUp[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return st
}

// gaveUp counts one message or reply given up for reason, in the metric
// and for Status.
func (d *Dispatcher) gaveUp(reason string) {
	d.opts.Metrics.GivenUp.WithLabelValues(reason).Inc()
	n, _ := d.givenUp.LoadOrStore(reason, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}
