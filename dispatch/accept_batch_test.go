package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// batchJournal is a journal that accepts a batch's records together
// (AcceptDeferredAll, as pgstore's does), here one by one on the files
// journal underneath; it records each call's ids and can fail them.
type batchJournal struct {
	sessions.Delivery
	mu    sync.Mutex
	calls [][]string
	fail  error
}

func (j *batchJournal) AcceptDeferredAll(ctx context.Context, recs []sessions.Record) ([]bool, []error, func() error) {
	j.mu.Lock()
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	j.calls = append(j.calls, ids)
	fail := j.fail
	j.mu.Unlock()
	dups, errs := make([]bool, len(recs)), make([]error, len(recs))
	var waits []func() error
	for i, r := range recs {
		if fail != nil {
			errs[i] = fmt.Errorf("%w: %w", sessions.ErrStorage, fail)
			continue
		}
		dup, wait, err := j.Delivery.(deferredAcceptor).AcceptDeferred(ctx, r)
		dups[i], errs[i] = dup, err
		waits = append(waits, wait)
	}
	return dups, errs, func() error {
		var all []error
		for _, w := range waits {
			all = append(all, w())
		}
		return errors.Join(all...)
	}
}

func (j *batchJournal) batches() [][]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

type batchJournalBackend struct {
	sessions.Backend
	j *batchJournal
}

func (b batchJournalBackend) Journal() sessions.Delivery { return b.j }

func withBatchJournal(j *batchJournal) harnessOpt {
	return func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend {
			j.Delivery = b.Journal()
			return batchJournalBackend{Backend: b, j: j}
		}
	}
}

// An adapter's batch (Telegram's getUpdates) is accepted in one write, in
// its order, when the adapter waits for it: nothing runs before that, and
// every message is answered once after it.
func TestBatchAcceptedInOneWrite(t *testing.T) {
	j := &batchJournal{}
	h := newHarness(t, "", nil, withBatchJournal(j))
	ctx, b := channels.WithBatch(h.ctx)
	var ids []string
	for i, chat := range []string{"1", "2", "1", "3"} {
		msg := in("tg", chat, fmt.Sprint("m", i))
		ids = append(ids, RecordID(msg))
		if err := h.d.Handle(ctx, msg); err != nil {
			t.Fatalf("Handle m%d: %v", i, err)
		}
	}
	if got := j.batches(); len(got) != 0 {
		t.Fatalf("accepted %v before the batch's wait", got)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("batch wait: %v", err)
	}
	if got := j.batches(); len(got) != 1 || !slices.Equal(got[0], ids) {
		t.Fatalf("accept calls %v, want one of %v", got, ids)
	}
	h.drained()
	got := h.tg.texts()
	slices.Sort(got)
	if want := []string{"re: m0", "re: m1", "re: m2", "re: m3"}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}

// /stop in a batch stops the messages before it in the same batch: they
// are accepted and queued first, not after the stop (and then answered).
func TestBatchStopReachesWhatCameBefore(t *testing.T) {
	j := &batchJournal{}
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m, withBatchJournal(j))
	ctx, b := channels.WithBatch(h.ctx)
	for _, text := range []string{"hello", "/stop"} {
		if err := h.d.Handle(ctx, in("tg", "7", text)); err != nil {
			t.Fatalf("Handle %q: %v", text, err)
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	close(m.block)
	h.drained()
	for _, s := range h.tg.texts() {
		if strings.HasPrefix(s, "re: ") {
			t.Errorf("the message before /stop was answered: %q (all: %q)", s, h.tg.texts())
		}
	}
}

// A batch the journal could not store fails the adapter's wait (it
// acknowledges nothing and fetches the batch again); nothing of it runs,
// and the redelivered batch is answered once.
func TestBatchAcceptFailureFailsTheWait(t *testing.T) {
	j := &batchJournal{fail: errors.New("connection reset")}
	h := newHarness(t, "", nil, withBatchJournal(j))
	msgs := []channels.Inbound{in("tg", "4", "one"), in("tg", "5", "two")}
	ctx, b := channels.WithBatch(h.ctx)
	for _, msg := range msgs {
		if err := h.d.Handle(ctx, msg); err != nil {
			t.Fatalf("Handle: %v", err)
		}
	}
	if err := b.Wait(); !errors.Is(err, channels.ErrUnavailable) {
		t.Fatalf("batch wait = %v, want channels.ErrUnavailable", err)
	}
	j.mu.Lock()
	j.fail = nil
	j.mu.Unlock()
	ctx, b = channels.WithBatch(h.ctx)
	for _, msg := range msgs {
		if err := h.d.Handle(ctx, msg); err != nil {
			t.Fatalf("Handle again: %v", err)
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("second batch wait: %v", err)
	}
	h.drained()
	got := h.tg.texts()
	slices.Sort(got)
	if want := []string{"re: one", "re: two"}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}

// The same message twice in one batch (a redelivery racing its original)
// is answered once.
func TestBatchDuplicateAnsweredOnce(t *testing.T) {
	j := &batchJournal{}
	h := newHarness(t, "", nil, withBatchJournal(j))
	msg := in("tg", "8", "once")
	ctx, b := channels.WithBatch(h.ctx)
	for range 2 {
		if err := h.d.Handle(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: once"}) {
		t.Errorf("answers %q, want one", got)
	}
}
