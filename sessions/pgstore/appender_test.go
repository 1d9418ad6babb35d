package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func startAppender(t *testing.T, db *DB) (*Appender, func()) {
	t.Helper()
	a := db.NewAppender(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	return a, stop
}

func TestAppenderGroupsConcurrentAppends(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	a, stop := startAppender(t, db)
	ids := []string{"g-1", "g-2", "g-3", "g-4", "g-5"}
	const per = 6
	run(t, workers, func(g int) error {
		sid := ids[g%len(ids)]
		for i := range per {
			x, y := fmt.Sprintf("w%d-%d-x", g, i), fmt.Sprintf("w%d-%d-y", g, i)
			seqs, err := a.Append(ctx, sid, msg(x, "", x), msg(y, x, y))
			if err != nil {
				return err
			}
			if len(seqs) != 2 || seqs[1] != seqs[0]+1 {
				return fmt.Errorf("seqs %v", seqs)
			}
		}
		return nil
	})
	stop()
	total := 0
	for _, sid := range ids {
		all, err := db.Load(ctx, sid, 1)
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range all {
			if e.Seq != int64(j+1) {
				t.Fatalf("%s: entry %d has seq %d", sid, j, e.Seq)
			}
		}
		total += len(all)
	}
	if total != workers*per*2 {
		t.Errorf("%d entries, want %d", total, workers*per*2)
	}
	if a.grouped.Load() == 0 {
		t.Error("50 concurrent appenders were never committed together")
	}
	if _, err := a.Append(ctx, "g-1", msg("late", "", "late")); !errors.Is(err, ErrAppenderStopped) {
		t.Errorf("Append after Run returned: %v", err)
	}
}

// A bad append in a group fails alone: the group's transaction is rolled
// back whole and the others are retried, each committed exactly once.
func TestAppenderFailureIsolated(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	if _, err := db.Append(ctx, "s", msg("taken", "", "first")); err != nil {
		t.Fatal(err)
	}
	a := db.NewAppender(0)
	var group []*appendReq
	for _, c := range []struct{ sid, id string }{{"s", "ok1"}, {"s", "taken"}, {"t", "ok2"}, {"s", "ok3"}} {
		args, err := db.appendArgs(c.sid, []TranscriptEntry{msg(c.id, "", c.id)})
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, &appendReq{sessionID: c.sid, sql: appendSQL, args: args, done: make(chan struct{})})
	}
	a.commit(ctx, group)
	if group[1].err == nil {
		t.Error("the duplicate id was appended")
	}
	for _, i := range []int{0, 2, 3} {
		if group[i].err != nil {
			t.Errorf("append %d failed with its group: %v", i, group[i].err)
		}
	}
	if a.grouped.Load() != 0 {
		t.Error("a failed group was counted as committed")
	}
	s, _ := db.Load(ctx, "s", 1)
	if got := ids(s); !slices.Equal(got, []string{"taken", "ok1", "ok3"}) {
		t.Errorf("session s holds %v, want taken ok1 ok3 (each once, no gap)", got)
	}
	if s[2].Seq != 3 {
		t.Errorf("seq of ok3 = %d, want 3", s[2].Seq)
	}
}
