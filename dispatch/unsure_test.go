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
		return j.Delivery.Accept(ctx, rec)
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
	eventually(t, "the stored message to be answered", func() bool { return len(h.tg.texts()) == 1 })
	h.drained()
	time.Sleep(3 * unsureSettled)
	if got := fmt.Sprint(h.tg.texts()); got != "[re: lost answer]" {
		t.Errorf("chat got %s, want one answer", got)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model ran %d times, want 1", n)
	}
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
	if n := h.d.unsure.size(); n != 0 {
		t.Errorf("%d failed writes still kept", n)
	}
}
