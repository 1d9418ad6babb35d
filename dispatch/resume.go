package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// recovery picks up work this process did not accept itself, or not for
// sure: what a previous run left (resume, at start), what another replica
// left (adoptOrphans, on shared storage) and messages whose journal write
// failed but may have stored them (unsure.go). It owns the goroutines it
// starts (orphan adoption, one resolver per unsure write) and shutdown
// waits for them; the work they find runs on the lanes like any other.
type recovery struct {
	d      *Dispatcher // the lanes, the journal, the give-up notices
	unsure unsureSet   // messages whose journal write failed (unsure.go)
	// stop ends the goroutines below; shutdown cancels it as the
	// dispatcher stops accepting work.
	stop   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // counts adoptOrphans and resolveUnsure goroutines
}

func newRecovery(d *Dispatcher) *recovery {
	stop, cancel := context.WithCancel(context.Background())
	return &recovery{d: d, stop: stop, cancel: cancel}
}

// goAdopt starts adoptOrphans, until ctx ends or shutdown.
func (r *recovery) goAdopt(ctx context.Context, o sessions.Orphans) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.adoptOrphans(ctx, o)
	}()
}

// shutdown stops orphan adoption and the unsure-write resolvers and waits
// for them: what they had not yet taken stays for the next start or
// another replica.
func (r *recovery) shutdown() {
	r.cancel()
	r.wg.Wait()
}

// resume picks up what a previous run left (SPEC §3.7); call it once at
// start, after Register. Streaming drafts left by a crash are cleared first
// (see stream.go). Replies in the outbox are sent first (only their
// chunks not yet delivered, on their session's lane); then every record
// without an outcome is queued again, except one that failed or was in
// flight at too many process deaths: that is given up with a notice.
func (r *recovery) resume(ctx context.Context) (int, error) {
	d := r.d
	d.clearLeftDrafts(ctx)
	r.settleClaimed(ctx)
	replies, err := d.journal.Replies()
	if err != nil {
		return 0, fmt.Errorf("dispatch: resume: %w", err)
	}
	recs, err := d.journal.Pending()
	if err != nil {
		return 0, fmt.Errorf("dispatch: resume: %w", err)
	}
	n := r.resumeWork(ctx, replies, recs, false)
	if n > 0 || len(replies) > 0 {
		d.log.Info("resumed journaled work", zap.Int("messages", n), zap.Int("replies", len(replies)))
	}
	if o, ok := d.journal.(sessions.Orphans); ok {
		r.goAdopt(ctx, o)
	}
	return n, nil
}

// resumeWork queues replies (sent first) and records left by a process
// that stopped, as Resume describes; it returns how many records run
// again. Replies taken over from a running replica (adopted) are sent on
// their own goroutines: their sessions' turns wait until they were sent
// (sessions.Orphans), and one may be waiting on the lane, ahead of
// anything queued now.
func (r *recovery) resumeWork(ctx context.Context, replies []sessions.Reply, recs []sessions.Record, adopted bool) int {
	d := r.d
	for i := range replies {
		rp := replies[i]
		if adopted {
			// Its session's turns wait until it was sent (sessions.Orphans).
			d.outbox.goResend(ctx, rp)
			continue
		}
		key, err := routing.Parse(rp.SessionKey)
		if err != nil {
			d.outbox.goResend(ctx, rp) // a notice outside any session
			continue
		}
		d.enqueue(ctx, &work{Key: key, AgentID: rp.AgentID, Reply: &rp})
	}
	n := 0
	var ws []*work
	started := map[string]bool{}
	for _, rec := range recs {
		w, err := r.workFromRecord(rec)
		if err != nil {
			d.log.Error("journal record unreadable; giving it up", zap.String("record_id", rec.ID), zap.Error(err))
			d.gaveUp(GiveUpUnreadable)
			d.buryRecord(ctx, rec, "unreadable: "+err.Error())
			d.finish(rec.ID)
			continue
		}
		switch {
		case rec.Deaths() >= d.opts.MaxDeaths:
			d.fails.giveUp(ctx, w, fmt.Sprintf("the process stopped %d times while it ran", rec.Deaths()))
			continue
		case rec.Failures >= d.opts.MaxFailures:
			d.fails.giveUp(ctx, w, fmt.Sprintf("it failed %d times", rec.Failures))
			continue
		}
		ws = append(ws, w)
		started[rec.ID] = rec.Starts+rec.Attempts > 0
		d.opts.Metrics.Replayed.Inc()
		n++
	}
	for _, w := range regroupReplayed(ws, d.rt.Load().Inbound, started) {
		d.enqueue(ctx, w)
	}
	return n
}

func (r *recovery) workFromRecord(rec sessions.Record) (*work, error) {
	d := r.d
	var env envelope
	if err := json.Unmarshal(rec.Payload, &env); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	key, err := routing.Parse(rec.SessionKey)
	if err != nil {
		return nil, err
	}
	w := &work{RecordID: rec.ID, AgentID: rec.AgentID, Key: key,
		recordState: recordState{Replayed: true, Failures: rec.Failures, AcceptedAt: rec.AcceptedAt}}
	switch {
	case env.Inbound != nil:
		w.In, w.HistoryMark = *env.Inbound, env.History
		if !w.In.Press {
			w.Command, w.Args = parseCommand(w.In.Text, d.rt.Load().Reset)
		}
	case env.Agent != nil:
		w.Agent = env.Agent
	default:
		return nil, fmt.Errorf("empty payload")
	}
	return w, nil
}
