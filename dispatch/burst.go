package dispatch

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// Inbound bursts (messages.inbound). A sender often says one thing in
// several messages ("hi", "how are you", "?"), and Telegram clients cut a
// long paste into messages of 4096 characters. Every such message is
// journaled by Handle before its adapter acknowledges it, exactly like any
// other; only then is it held here, per session, account and sender, for
// the channel's window (restarted by each new part; the paste window after
// a long fragment), and handed to the lane as ONE item: the first part's
// work carries the others in Joined. The turn joins the parts into one
// user message carrying every part's record id (a newline between
// separate messages, nothing between the fragments of a paste), so its
// reply answers all of them through the outbox as one batch.
//
// Commands are never held: one flushes its sender's held burst first, so
// the order is kept. A burst is flushed at once when it reaches MaxParts;
// a part that would pass MaxChars starts a new one.
//
// After a crash, held or running parts are pending in the journal. Resume
// joins the pending messages of one sender again (regroupReplayed) before
// queueing them, without the caps: a replayed group is then always a
// superset of any burst that ran, so recovery (recover) finds each joined
// transcript entry's records together and never answers one part twice.
// Messages whose turn had started are joined even where assembly is now
// off (it may have been on when they ran). A failed turn is queued again
// as one item for the same reason (bundle).

// holder keeps the bursts being assembled. Its lock is never held across
// I/O or while calling into lanes.
type holder struct {
	mu     sync.Mutex
	held   map[holdKey]*heldBurst // guarded by mu
	closed bool                   // guarded by mu
}

// heldBurst is one burst waiting for its window to pass.
type heldBurst struct {
	lead, last *work
	parts      int
	chars      int
	gen        uint64 // bumped by each part; a timer of an older gen is stale
	timer      *time.Timer
}

// holdKey separates bursts: one session, one bot account, one sender.
type holdKey struct {
	key             routing.Key
	account, sender string
}

// holdKeyOf is w's burst.
func holdKeyOf(w *work) holdKey {
	return holdKey{key: w.Key, account: w.In.AccountID, sender: w.In.SenderID}
}

func textLen(s string) int { return utf8.RuneCountInString(s) }

// admit hands journaled work to its lane, holding a sender's message for
// the burst window first where its channel assembles bursts (never in
// queue mode, which merges nothing).
func (d *Dispatcher) admit(ctx context.Context, w *work) {
	w.Key = w.Key.Canonical() // one burst and one lane per session
	if w.Command != "" || w.Agent != nil || w.Reply != nil || w.Replayed {
		if w.Command != "" {
			if lead := d.hold.take(holdKeyOf(w)); lead != nil {
				d.enqueue(ctx, lead)
			}
		}
		d.enqueue(ctx, w)
		return
	}
	if d.laneSettings(w.Key).Mode == lanes.FIFO {
		// queue mode: plain FIFO, one turn per message, nothing merged.
		d.enqueue(ctx, w)
		return
	}
	k := holdKeyOf(w)
	rule := d.rt.Load().Inbound.rule(w.In.Channel)
	if !rule.on() {
		// No bursts on this channel: what add would do (a burst held
		// under an earlier rule goes first, then w), without the window's
		// closure or a result slice for every message.
		if lead := d.hold.take(k); lead != nil {
			d.enqueue(ctx, lead)
		}
		d.enqueue(ctx, w)
		return
	}
	for _, r := range d.hold.add(k, w, rule, d.holdFire(k)) {
		d.enqueue(ctx, r)
	}
}

// holdFire is the window timer's action for burst k: the burst is queued
// if no part came since the timer was armed (gen).
func (d *Dispatcher) holdFire(k holdKey) func(gen uint64) {
	return func(gen uint64) {
		if lead := d.hold.takeGen(k, gen); lead != nil {
			d.enqueue(context.Background(), lead)
		}
	}
}

// add joins w to its sender's held burst (or starts one) and returns the
// work to queue now, in order: a burst that is complete (caps, window 0)
// and w itself when it is not held.
func (h *holder) add(k holdKey, w *work, r burstRule, fire func(gen uint64)) []*work {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := textLen(w.In.Text)
	var out []*work
	b := h.held[k]
	if b != nil && (!r.on() || b.parts >= r.maxParts || b.chars+n > r.maxChars) {
		out = append(out, h.removeLocked(k, b))
		b = nil
	}
	if h.closed || !r.on() || n >= r.maxChars {
		return append(out, w)
	}
	if b == nil {
		if h.held == nil {
			h.held = map[holdKey]*heldBurst{}
		}
		w.Prev, w.Glue, w.Joined = "", "", nil
		b = &heldBurst{lead: w, last: w}
		h.held[k] = b
	} else {
		w.Prev, w.Glue, w.Joined = b.last.RecordID, r.glue(b.last, w), nil
		b.lead.Joined = append(b.lead.Joined, w)
		b.last = w
	}
	b.parts++
	b.chars += n
	win := r.window(w)
	if b.parts >= r.maxParts || win <= 0 {
		return append(out, h.removeLocked(k, b))
	}
	b.gen++
	if b.timer != nil {
		b.timer.Stop()
	}
	gen := b.gen
	b.timer = time.AfterFunc(win, func() { fire(gen) })
	return out
}

// removeLocked forgets b and returns its lead.
func (h *holder) removeLocked(k holdKey, b *heldBurst) *work {
	if b.timer != nil {
		b.timer.Stop()
	}
	delete(h.held, k)
	return b.lead
}

// take removes k's held burst, if any, and returns its lead.
func (h *holder) take(k holdKey) *work {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.held[k]; b != nil {
		return h.removeLocked(k, b)
	}
	return nil
}

// takeGen is take for a window that passed: only if no part came since.
func (h *holder) takeGen(k holdKey, gen uint64) *work {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.held[k]; b != nil && b.gen == gen {
		return h.removeLocked(k, b)
	}
	return nil
}

// drop removes every burst held for session key and returns their leads
// (/stop).
func (h *holder) drop(key routing.Key) []*work {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*work
	for k, b := range h.held {
		if k.key == key {
			out = append(out, h.removeLocked(k, b))
		}
	}
	return out
}

// close stops every window at shutdown; the held parts stay pending in the
// journal and run at the next start. Later parts are not held.
func (h *holder) close() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	n := 0
	for k, b := range h.held {
		n += 1 + len(b.lead.Joined)
		h.removeLocked(k, b)
	}
	return n
}

// expand is w followed by the parts joined to it.
func expand(w *work) []*work {
	if len(w.Joined) == 0 {
		return []*work{w}
	}
	return append([]*work{w}, w.Joined...)
}

// bundle makes ws (one turn's work, in order) one lane item again.
func bundle(ws []*work) *work {
	for _, w := range ws {
		w.Joined = nil
	}
	lead := ws[0]
	lead.Joined = append([]*work(nil), ws[1:]...)
	return lead
}

// regroupReplayed joins the replayed messages of each sender again, in
// journal order, where their channel assembles bursts; a command of the
// sender ends the group. Groups are not capped (see the notes at the top
// of this file: a replayed group must cover any burst that ran). Where
// assembly is off now, messages whose turn had started (started) are still
// joined: assembly may have been on when they ran.
func regroupReplayed(ws []*work, in InboundConfig, started map[string]bool) []*work {
	var out []*work
	open := map[holdKey]*work{}
	last := map[holdKey]*work{}
	for _, w := range ws {
		k := holdKeyOf(w)
		if w.Agent != nil || w.Command != "" || w.Reply != nil {
			delete(open, k)
			out = append(out, w)
			continue
		}
		r := in.rule(w.In.Channel)
		if !r.on() && !started[w.RecordID] {
			delete(open, k)
			out = append(out, w)
			continue
		}
		if lead := open[k]; lead != nil {
			prev := last[k]
			w.Prev, w.Glue, w.Joined = prev.RecordID, r.glue(prev, w), nil
			lead.Joined = append(lead.Joined, w)
			last[k] = w
			continue
		}
		w.Prev, w.Glue, w.Joined = "", "", nil
		open[k], last[k] = w, w
		out = append(out, w)
	}
	return out
}
