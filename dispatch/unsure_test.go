package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// unsureBackend is a backend whose journal reports a storage failure for
// the accepts named in fail, after storing them when store is set, as a
// database does that commits an insert and loses the connection before it
// answers; Stored asks the real journal.
type unsureBackend struct {
	sessions.Backend
	j *unsureJournal
}

func (b *unsureBackend) Journal() sessions.Delivery {
	b.j.Delivery = b.Backend.Journal()
	return b.j
}

type unsureJournal struct {
	sessions.Delivery
	mu     sync.Mutex
	fail   map[string]bool // text → fail its next accept
	store  bool            // a failed accept stored the record first
	probes int
	stored map[string]bool // ids stored by failed accepts, until done
	// slow names texts whose (successful) accept is seen as stored by the
	// probe before it returns: the accept waits for a probe that saw it.
	slow map[string]bool
	seen chan struct{} // closed by the first probe that sees a slow record
	// down makes Stored fail, as a journal that does not answer (an
	// outage).
	down bool
}

func (j *unsureJournal) Accept(ctx context.Context, rec sessions.Record) (bool, error) {
	j.mu.Lock()
	text := string(rec.Payload)
	var failing string
	for t := range j.fail {
		if j.fail[t] && containsText(text, t) {
			failing = t
		}
	}
	if failing != "" {
		j.fail[failing] = false
	}
	store := j.store
	j.mu.Unlock()
	if failing == "" {
		slow := false
		j.mu.Lock()
		for t := range j.slow {
			if containsText(text, t) {
				slow = true
			}
		}
		j.mu.Unlock()
		dup, err := j.Delivery.Accept(ctx, rec)
		if slow && err == nil && !dup {
			j.mu.Lock()
			j.stored[rec.ID] = true
			j.mu.Unlock()
			select { // committed, not yet answered: the resolver asks meanwhile
			case <-j.seen:
			case <-time.After(5 * time.Second):
			}
		}
		return dup, err
	}
	if store {
		if _, err := j.Delivery.Accept(ctx, rec); err != nil {
			return false, err
		}
		j.mu.Lock()
		j.stored[rec.ID] = true
		j.mu.Unlock()
	}
	return false, fmt.Errorf("journal accept: %w: connection lost before the answer", sessions.ErrStorage)
}

func (j *unsureJournal) Done(ids ...string) error {
	j.mu.Lock()
	for _, id := range ids {
		delete(j.stored, id)
	}
	j.mu.Unlock()
	return j.Delivery.Done(ids...)
}

// Stored is true for a record a failed accept stored and no turn finished.
func (j *unsureJournal) Stored(_ context.Context, id string) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.probes++
	if j.down {
		return false, fmt.Errorf("journal stored: %w: the database does not answer", sessions.ErrStorage)
	}
	if j.stored[id] && j.seen != nil {
		select {
		case <-j.seen:
		default:
			close(j.seen)
		}
	}
	return j.stored[id], nil
}

// containsText reports whether the journaled payload carries text as a
// JSON string.
func containsText(payload, text string) bool {
	return strings.Contains(payload, `"`+text+`"`)
}

func fastUnsure(t *testing.T) {
	every, settled := unsureEvery, unsureSettled
	unsureEvery, unsureSettled = 10*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { unsureEvery, unsureSettled = every, settled })
}

// A message whose journal write failed after it was stored (the database
// committed, the answer was lost) is refused, so its sender delivers it
// again, and the redelivery is a duplicate: the dispatcher still runs it,
// once, having asked the journal whether it was stored.
func TestAcceptFailedAfterStoreRunsOnce(t *testing.T) {
	fastUnsure(t)
	j := &unsureJournal{fail: map[string]bool{"lost answer": true}, store: true, stored: map[string]bool{}}
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { return &unsureBackend{Backend: b, j: j} }
	})
	msg := in("tg", "c1", "lost answer")
	if err := h.d.Handle(h.ctx, msg); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Handle = %v, want the storage failure (the sender delivers it again)", err)
	}
	if err := h.d.Handle(h.ctx, msg); err == nil {
		t.Fatal("the redelivery was accepted again; want a duplicate")
	}
	answeredOnce(t, h, m, "lost answer")
}

// answeredOnce waits for the answer to text, then checks, once late
// duplicates had time to come, that it was answered once and the model
// ran once.
func answeredOnce(t *testing.T, h *harness, m *model, text string) {
	t.Helper()
	eventually(t, "the stored message to be answered", func() bool { return len(h.tg.texts()) == 1 })
	h.drained()
	time.Sleep(3 * unsureSettled)
	if got, want := fmt.Sprint(h.tg.texts()), "[re: "+text+"]"; got != want {
		t.Errorf("chat got %s, want one answer %s", got, want)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model ran %d times, want 1", n)
	}
}

// A journal that does not answer for longer than the resolver asks at
// its first pace (a long outage) is asked less often, never given up on:
// the message its failed write stored runs once the journal answers. Given
// up, it stayed pending and this process's, never run, and on a shared
// database held its session's newer messages behind it until a restart.
func TestAcceptFailedAfterStoreRunsAfterALongOutage(t *testing.T) {
	fastUnsure(t)
	slowAfter, slowEvery := unsureSlow, unsureSlowEvery
	unsureSlow, unsureSlowEvery = 100*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { unsureSlow, unsureSlowEvery = slowAfter, slowEvery })
	j := &unsureJournal{fail: map[string]bool{"lost in the outage": true}, store: true, stored: map[string]bool{}, down: true}
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { return &unsureBackend{Backend: b, j: j} }
	})
	if err := h.d.Handle(h.ctx, in("tg", "c1", "lost in the outage")); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Handle = %v, want the storage failure", err)
	}
	time.Sleep(5 * unsureSlow) // the journal does not answer meanwhile
	if got := h.tg.texts(); len(got) != 0 {
		t.Fatalf("chat got %v while the journal could not say whether the message was stored", got)
	}
	j.mu.Lock()
	j.down = false
	j.mu.Unlock()
	answeredOnce(t, h, m, "lost in the outage")
}

// A failed write that did not store the record is forgotten once the
// journal says so, and the redelivery runs; one that arrives before the
// journal is asked settles it: either way the message is answered once.
func TestAcceptFailedNotStoredRunsTheRedelivery(t *testing.T) {
	fastUnsure(t)
	j := &unsureJournal{fail: map[string]bool{"early": true, "late": true}, stored: map[string]bool{}}
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { return &unsureBackend{Backend: b, j: j} }
	})
	early := in("tg", "c1", "early")
	if err := h.d.Handle(h.ctx, early); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Handle = %v, want the storage failure", err)
	}
	h.handle(early) // redelivered at once, before the journal is asked
	late := in("tg", "c2", "late")
	if err := h.d.Handle(h.ctx, late); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Handle = %v, want the storage failure", err)
	}
	eventually(t, "the journal to be asked", func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.probes > 0
	})
	time.Sleep(3 * unsureSettled) // the failure is forgotten
	h.handle(late)
	h.drained()
	time.Sleep(3 * unsureSettled)
	texts := h.tg.texts()
	slices.Sort(texts)
	if got := fmt.Sprint(texts); got != "[re: early re: late]" {
		t.Errorf("chat got %s, want each message answered once", got)
	}
	if n := h.d.recovery.unsure.size(); n != 0 {
		t.Errorf("%d failed writes still kept", n)
	}
}

// TestRedeliveryStoredWhileProbedRunsOnce: the failed write stored
// nothing; the redelivery's write does, and the journal's "stored" reaches
// the resolver before that accept returns. The resolver runs the failed
// write's work, and the redelivery is not queued beside it: while a turn
// of the session runs, both would wait in its lane and be merged into one
// input (the multi-replica test saw "[c6 n53 n53 ...]" reach the model
// after a database outage). The model gets the message once.
func TestRedeliveryStoredWhileProbedRunsOnce(t *testing.T) {
	fastUnsure(t)
	j := &unsureJournal{fail: map[string]bool{"raced": true}, stored: map[string]bool{},
		slow: map[string]bool{"raced": true}, seen: make(chan struct{})}
	block := make(chan struct{})
	m := &model{block: block, started: make(chan struct{}, 4)}
	core, logs := observer.New(zap.WarnLevel)
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Collect, Cap: 20, Drop: lanes.DropSummarize}), func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { return &unsureBackend{Backend: b, j: j} }
		h.disp = func(o *Options) { o.Logger = zap.New(core) }
	})
	h.handle(in("tg", "c1", "busy"))
	<-m.started // the session's turn runs: what comes now waits in its lane
	msg := in("tg", "c1", "raced")
	if err := h.d.Handle(h.ctx, msg); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Handle = %v, want the storage failure", err)
	}
	if err := h.d.Handle(h.ctx, msg); err != nil {
		t.Fatalf("the redelivery: %v, want it accepted", err)
	}
	eventually(t, "the resolver to run the stored message", func() bool { return h.d.recovery.unsure.size() == 0 })
	close(block)
	eventually(t, "both messages answered", func() bool { return len(h.tg.texts()) >= 2 })
	h.drained()
	time.Sleep(3 * unsureSettled)
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model ran %d times, want 2 (busy, then raced)", len(reqs))
	}
	if got := lastUserTexts(reqs[1].Messages); fmt.Sprint(got) != "[raced]" {
		t.Errorf("the model's new input %q, want the message once", got)
	}
	if n := logs.FilterMessage("a message was queued twice in one batch").Len(); n != 0 {
		t.Errorf("the message was queued twice (%d warnings): the batch's safety net caught what unsure.go should prevent", n)
	}
}

// deferJournal is unsureJournal with deferred accepts (as pgstore's): a
// text in failWait has its record stored and its work queued, and then the
// batch's durability wait fails, as when the database loses the connection
// before it answers the flush.
type deferJournal struct {
	*unsureJournal
	failWait map[string]bool
}

func (j *deferJournal) AcceptDeferred(ctx context.Context, rec sessions.Record) (bool, func() error, error) {
	dup, err := j.Delivery.Accept(ctx, rec)
	if err != nil || dup {
		return dup, func() error { return nil }, err
	}
	j.mu.Lock()
	fail := false
	for t := range j.failWait {
		if containsText(string(rec.Payload), t) {
			fail = true
			j.stored[rec.ID] = true // pending: the probe sees it stored
		}
	}
	j.mu.Unlock()
	return false, func() error {
		if fail {
			return fmt.Errorf("flush wal: %w: connection lost before the answer", sessions.ErrStorage)
		}
		return nil
	}, nil
}

type deferBackend struct {
	sessions.Backend
	j *deferJournal
}

func (b *deferBackend) Journal() sessions.Delivery {
	b.j.Delivery = b.Backend.Journal()
	return b.j
}

// TestDeferredWaitFailedRunsOnce: a batch's accept stores the record and
// queues its work, then the batch's durability wait fails, so the sender
// delivers the message again; the database is still down and the
// redelivery's write fails too. The failed write's resolver then finds the
// record stored, but it is the first accept's, whose work runs already:
// the message is answered once (the PostgreSQL outage test saw it answered
// by the resolver's run and again by the parked turn's replay).
func TestDeferredWaitFailedRunsOnce(t *testing.T) {
	fastUnsure(t)
	j := &deferJournal{unsureJournal: &unsureJournal{fail: map[string]bool{"flushed?": true}, stored: map[string]bool{}},
		failWait: map[string]bool{"flushed?": true}}
	block := make(chan struct{})
	m := &model{block: block, started: make(chan struct{}, 4)}
	h := newHarness(t, "", m, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend { return &deferBackend{Backend: b, j: j} }
	})
	msg := in("tg", "c1", "flushed?")
	bctx, batch := channels.WithBatch(h.ctx)
	if err := h.d.Handle(bctx, msg); err != nil {
		t.Fatalf("Handle in a batch: %v", err)
	}
	<-m.started // its turn runs
	if err := batch.Wait(); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("batch wait = %v, want the storage failure", err)
	}
	if err := h.d.Handle(h.ctx, msg); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("the redelivery: %v, want the storage failure", err)
	}
	time.Sleep(3 * unsureSettled) // the resolver asks while the turn runs
	close(block)
	eventually(t, "the message answered", func() bool { return len(h.tg.texts()) >= 1 })
	h.drained()
	time.Sleep(3 * unsureSettled)
	if got := fmt.Sprint(h.tg.texts()); got != "[re: flushed?]" {
		t.Errorf("chat got %s, want one answer", got)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model ran %d times, want 1", n)
	}
}
