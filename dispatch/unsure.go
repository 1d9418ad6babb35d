package dispatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// A journal write that failed may still have stored the record: a shared
// database can commit the insert and lose the connection before it
// answers. The message was refused (the channel delivers it again, maybe
// to another replica, where it is then a duplicate), so nobody would run
// it. unsure keeps such work and asks the journal (sessions.AcceptProbe)
// until it knows: stored and this process's, the work runs as if accepted;
// not stored, it is forgotten (the redelivery brings it). A redelivery
// that this process accepts settles it first, so it never runs twice; and
// when the journal's "stored" comes from that redelivery's own write (the
// failed write had stored nothing, the redelivery's commit is seen before
// its accept returns), the resolver's run counts for it: accepted reports
// that, and the redelivery is not queued a second time.
//
// A deferred accept (accept.go) queues its work before the batch's
// durability wait; when that wait fails the sender delivers the message
// again although this process runs it already (the record is stored, the
// flush's answer was lost). heldUnsure remembers such ids: a redelivery's
// failed write of one is not kept (the resolver would see the record
// stored and run it a second time: the outage test saw a parked turn's
// replay deliver the stored reply after the resolver's run had answered),
// and a redelivery that stores it again is not queued.

// unsureEvery spaces the questions; after unsureSlow without an answer
// (a long outage) they are spaced unsureSlowEvery apart, and go on until
// the journal answers: a record stored and this process's, never run,
// would hold its session (on a shared database BeginTurn makes the
// session's newer messages wait behind it) until a restart. unsureSettled
// is how long after the failure answers of "not stored" are believed (a
// commit in flight lands first).
var (
	unsureEvery     = time.Second
	unsureSlow      = 10 * time.Minute
	unsureSlowEvery = 30 * time.Second
	unsureSettled   = 5 * time.Second
	// unsureMarkKeep is how long the ids the resolver ran, or held, are
	// remembered for a redelivery (one that came as a duplicate never
	// settles its mark).
	unsureMarkKeep = 10 * time.Minute
)

// unsureSet is the work whose journal write failed, by record id.
type unsureSet struct {
	mu  sync.Mutex
	m   map[string]*work
	ran map[string]time.Time // ids the resolver ran, until a redelivery's accept settles them
	// held: ids whose work this process queued although their deferred
	// accept's durability wait failed (heldUnsure).
	held map[string]time.Time
}

// put keeps w, reporting whether it was not kept already; work this
// process runs already (hold) is not kept.
func (u *unsureSet) put(w *work) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.held[w.RecordID]; ok {
		return false
	}
	if u.m == nil {
		u.m = map[string]*work{}
	}
	if _, ok := u.m[w.RecordID]; ok {
		u.m[w.RecordID] = w
		return false
	}
	u.m[w.RecordID] = w
	return true
}

// take removes and returns the work kept for id, if any.
func (u *unsureSet) take(id string) *work {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.m[id]
	delete(u.m, id)
	return w
}

// takeToRun is take for the resolver about to run the work: it remembers
// that id runs, so a redelivery of it accepted meanwhile is not queued
// again (settle). Marks older than unsureMarkKeep are dropped here: a
// redelivery that came as a duplicate never settles its mark.
func (u *unsureSet) takeToRun(id string, now time.Time) *work {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.m[id]
	if w == nil {
		return nil
	}
	delete(u.m, id)
	if u.ran == nil {
		u.ran = map[string]time.Time{}
	}
	for k, at := range u.ran {
		if now.Sub(at) > unsureMarkKeep {
			delete(u.ran, k)
		}
	}
	u.ran[id] = now
	return w
}

// hold remembers that id's work is queued in this process although the
// durability wait of its (deferred) accept failed. Marks older than
// unsureMarkKeep are dropped here: a redelivery that came as a duplicate
// never settles its mark.
func (u *unsureSet) hold(id string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held == nil {
		u.held = map[string]time.Time{}
	}
	for k, at := range u.held {
		if now.Sub(at) > unsureMarkKeep {
			delete(u.held, k)
		}
	}
	u.held[id] = now
}

// settle ends id's uncertainty for an accept that stored it and reports
// whether that accept's work should be queued: false when the resolver
// already runs it.
func (u *unsureSet) settle(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, id)
	if _, held := u.held[id]; held {
		delete(u.held, id)
		return false
	}
	if _, ran := u.ran[id]; ran {
		delete(u.ran, id)
		return false
	}
	return true
}

// acceptFailed keeps w, whose journal write failed with err, to run it if
// the record turns out stored after all.
func (r *recovery) acceptFailed(w *work, err error) {
	probe, ok := r.d.journal.(sessions.AcceptProbe)
	if !ok || w.RecordID == "" || !(isStorage(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return
	}
	if r.unsure.put(w) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.resolveUnsure(probe, w.RecordID)
		}()
	}
}

// accepted settles a record that a redelivery stored: it is not run again
// by resolveUnsure. It reports whether the redelivery's work should be
// queued: false when resolveUnsure already queued the failed write's work
// for the same record (the journal's "stored" it saw was this accept's).
func (r *recovery) accepted(id string) bool { return r.unsure.settle(id) }

// deferredFailed notes that the durability wait of id's deferred accept
// failed after its work was queued: the message is delivered again, but it
// runs here already (heldUnsure).
func (r *recovery) deferredFailed(id string) { r.unsure.hold(id, time.Now()) }

// resolveUnsure asks probe about id until it knows whether the failed
// write stored it, then runs the work or forgets it.
func (r *recovery) resolveUnsure(probe sessions.AcceptProbe, id string) {
	d := r.d
	log := d.log.With(zap.String("record_id", id))
	failed := time.Now()
	slow := false
	t := time.NewTicker(unsureEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop.Done():
			return // pending if stored: the next start or another replica runs it
		case <-t.C:
		}
		if d.closing.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(r.stop, 5*time.Second)
		stored, err := probe.Stored(ctx, id)
		cancel()
		switch {
		case err == nil && stored:
			if w := r.unsure.takeToRun(id, time.Now()); w != nil {
				log.Info("a message whose journal write failed was stored after all; running it")
				d.opts.Metrics.UnsureStored.Inc()
				// Queued as it is, never joined to its sender's burst:
				// what that burst holds came after the failure (its
				// redelivery, a duplicate, was answered before the next
				// message was sent), and a burst's parts run in the order
				// they joined (sortBatch orders a batch's lane items by
				// accept order, not the parts of one). An item of its own
				// is ordered: BeginTurn's Behind and Order put it before
				// newer work of the session.
				d.enqueue(d.life, w)
			}
			return
		case err == nil && time.Since(failed) >= unsureSettled:
			r.unsure.take(id) // not stored (or another replica's): its redelivery brings it
			return
		case err != nil && !slow && time.Since(failed) >= unsureSlow:
			slow = true
			t.Reset(unsureSlowEvery)
			log.Warn("still cannot learn whether a refused message was stored; asking less often until the journal answers",
				zap.Duration("every", unsureSlowEvery), zap.Error(err))
		}
	}
}

// size is how many failed writes are kept.
func (u *unsureSet) size() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}
