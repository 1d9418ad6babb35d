package dispatch

import (
	"context"
	"errors"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// deferringJournal records how the dispatcher accepts: durably at once
// (Accept) or with a wait handed back (AcceptDeferred).
type deferringJournal struct {
	sessions.Delivery // other methods are not called
	accepted          []string
	deferred          []string
	waited            int
	waitErr           error
}

func (j *deferringJournal) Accept(_ context.Context, rec sessions.Record) (bool, error) {
	j.accepted = append(j.accepted, rec.ID)
	return false, nil
}

func (j *deferringJournal) AcceptDeferred(_ context.Context, rec sessions.Record) (bool, func() error, error) {
	j.deferred = append(j.deferred, rec.ID)
	return false, func() error { j.waited++; return j.waitErr }, nil
}

// In a batch the journal's wait joins the batch (the adapter acknowledges
// after Batch.Wait); without one, Accept is durable when it returns.
func TestAcceptDefersTheWaitToTheBatch(t *testing.T) {
	j := &deferringJournal{}
	d := &Dispatcher{journal: j}
	ctx, b := channels.WithBatch(context.Background())
	for _, id := range []string{"r1", "r2"} {
		if dup, err := d.accept(ctx, sessions.Record{ID: id}); dup || err != nil {
			t.Fatalf("accept %s = %v, %v", id, dup, err)
		}
	}
	if len(j.deferred) != 2 || len(j.accepted) != 0 {
		t.Fatalf("in a batch: deferred %v, accepted %v; want both deferred", j.deferred, j.accepted)
	}
	if j.waited != 0 {
		t.Fatalf("%d waits ran before the batch's Wait", j.waited)
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if j.waited != 2 {
		t.Errorf("batch Wait ran %d of the journal's waits, want 2", j.waited)
	}
	j.waitErr = errors.New("flush failed")
	if _, err := d.accept(ctx, sessions.Record{ID: "r3"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); !errors.Is(err, j.waitErr) {
		t.Errorf("batch Wait = %v, want the journal's failure (nothing acknowledged)", err)
	}
	if _, err := d.accept(context.Background(), sessions.Record{ID: "r4"}); err != nil {
		t.Fatal(err)
	}
	if len(j.accepted) != 1 || j.accepted[0] != "r4" {
		t.Errorf("without a batch: accepted %v, want [r4]", j.accepted)
	}
}

// cancelJournal is a journal whose Accept waits for release and then
// records whether its context was cancelled meanwhile.
type cancelJournal struct {
	sessions.Delivery
	started, release chan struct{}
	err              error
}

func (j *cancelJournal) Accept(ctx context.Context, _ sessions.Record) (bool, error) {
	close(j.started)
	<-j.release
	j.err = ctx.Err()
	return false, j.err
}

// A journal write, once begun, is not cancelled by the caller going away
// (a webhook client that timed out): cancelled after its commit, it would
// report a stored record as refused, and nobody would run it.
func TestAcceptOutlivesTheCaller(t *testing.T) {
	j := &cancelJournal{started: make(chan struct{}), release: make(chan struct{})}
	d := &Dispatcher{journal: j}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.accept(ctx, sessions.Record{ID: "r1"})
		done <- err
	}()
	<-j.started
	cancel()
	close(j.release)
	if err := <-done; err != nil {
		t.Errorf("accept = %v after the caller went away, want the write finished", err)
	}
}
