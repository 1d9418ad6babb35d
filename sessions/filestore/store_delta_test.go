package filestore

import (
	"context"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"os"
	"sync"
	"testing"
	"time"
)

// TestChangeLogCrashStatesLoad: creations go to the change log (the
// snapshot is not rewritten); another process sees them; a torn last line
// is ignored and cut before the next append; a crash after a fold's
// snapshot but before the log was emptied re-applies only what the
// snapshot holds; Close folds everything into sessions.json.
func TestChangeLogCrashStatesLoad(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	s := mustStore(t, m, "main")
	for i := range 3 {
		mustBegin(t, s, dmKey(t, "main", fmt.Sprint(i)), sessions.Origin{Channel: "telegram"})
	}
	snap, _ := os.ReadFile(s.indexPath)
	log, _ := os.ReadFile(s.deltaPath)
	if len(log) == 0 {
		t.Fatal("creations did not go to the change log")
	}
	// Another process (the CLI) sees them.
	other := openTestManager(t, dir, Options{Passive: true})
	if es, err := mustStore(t, other, "main").List(); err != nil || len(es) != 3 {
		t.Fatalf("second process sees %d entries (%v), want 3", len(es), err)
	}
	_ = other.Close()

	// A torn last line (a crash mid-append) is ignored, then cut.
	f, _ := os.OpenFile(s.deltaPath, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"k":"agent:main:telegram:direct:torn","e":{"sessionKey":`)
	_ = f.Close()
	if idx, err := ReadIndex(s.dir); err != nil || len(idx) != 3 {
		t.Fatalf("index with a torn log line: %d entries, %v", len(idx), err)
	}
	mustBegin(t, s, dmKey(t, "main", "after"), sessions.Origin{Channel: "telegram"})
	if idx, err := ReadIndex(s.dir); err != nil || len(idx) != 4 {
		t.Fatalf("append after a torn line: %d entries, %v (glued?)", len(idx), err)
	}

	// Fold, then put the old log back: as if the process died between the
	// snapshot's rename and the log's truncation.
	if err := s.fold(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(s.deltaPath); len(b) != 0 {
		t.Fatalf("log not emptied by the fold: %d bytes", len(b))
	}
	if err := os.WriteFile(s.deltaPath, log, 0o600); err != nil {
		t.Fatal(err)
	}
	if idx, err := ReadIndex(s.dir); err != nil || len(idx) != 4 {
		t.Fatalf("snapshot + stale log: %d entries, %v", len(idx), err)
	}
	if _, err := s.Patch(context.Background(), dmKey(t, "main", "1"), func(e *sessions.Entry) error { e.Label = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(s.deltaPath); len(b) != 0 {
		t.Errorf("Close left %d bytes in the change log", len(b))
	}
	idx, err := ReadIndex(s.dir)
	if err != nil || len(idx) != 4 || idx[dmKey(t, "main", "1").String()].Label != "x" {
		t.Fatalf("after Close: %d entries, %v", len(idx), err)
	}
	if after, _ := os.ReadFile(s.indexPath); string(after) == string(snap) {
		t.Error("Close did not write the folded snapshot")
	}
}

// TestRecentMatchesList: Recent(n) is the first n of List.
func TestRecentMatchesList(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now})
	s := mustStore(t, m, "main")
	for i := range 40 {
		mustBegin(t, s, dmKey(t, "main", fmt.Sprint(i%7, "-", i)), sessions.Origin{})
		if i%3 != 0 {
			clk.Advance(time.Second) // some share an updatedAt: the key breaks ties
		}
	}
	all, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 5, 40, 100} {
		got, err := s.Recent(n)
		if err != nil {
			t.Fatal(err)
		}
		want := all[:min(n, len(all))]
		if len(got) != len(want) {
			t.Fatalf("Recent(%d) returned %d", n, len(got))
		}
		for i := range want {
			if got[i].SessionKey != want[i].SessionKey {
				t.Fatalf("Recent(%d)[%d] = %s, want %s", n, i, got[i].SessionKey, want[i].SessionKey)
			}
		}
	}
}

// TestReadDuringBatchWriteLosesNothing: a Begin that re-validates the cache
// while a batch is half on disk (new snapshot, old change log) must not
// reload that torn state over the cache. It did, and the stamps taken after
// the write then blessed it: Patches, counters and touches were lost
// (found by the conformance suite, sessions/sessionstest). Each round is a
// new store: the race is likeliest while the first snapshot is written.
func TestReadDuringBatchWriteLosesNothing(t *testing.T) {
	ctx := context.Background()
	const adders, each = 20, 10
	for round := range 30 {
		m := openTestManager(t, "", Options{})
		s := mustStore(t, m, "main")
		k := dmKey(t, "main", "42")
		mustBegin(t, s, k, sessions.Origin{Channel: "telegram", To: "42", Title: "hello"})
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			if _, err := s.Patch(ctx, k, func(e *sessions.Entry) error { e.Label = "ops"; return nil }); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			<-start
			for range each {
				if _, _, err := s.Begin(ctx, k, sessions.Origin{From: "u2"}); err != nil {
					t.Error(err)
				}
			}
		})
		for range adders {
			wg.Go(func() {
				<-start
				for range each {
					s.AddCounters(k, sessions.Counters{Messages: 1})
				}
			})
		}
		close(start)
		wg.Wait()
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		e, _, err := s.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		if e.Label != "ops" || e.MessageCount != adders*each || e.LastFrom != "u2" {
			t.Fatalf("round %d: label %q messages %d last from %q; want ops, %d, u2", round, e.Label, e.MessageCount, e.LastFrom, adders*each)
		}
	}
}
