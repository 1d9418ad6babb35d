package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
)

// TestRoomLogTwoProcesses: two handles on separate pools (two replicas)
// append to one room at once: the count limit holds exactly, a message
// delivered to both is kept once, and sequence numbers are unique.
func TestRoomLogTwoProcesses(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	db2, err := Open(context.Background(), Options{URL: url, MaxConns: 10, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db2.Close)
	logs := []*RoomLog{db.RoomLog(RoomLogOptions{}), db2.RoomLog(RoomLogOptions{})}
	const room = "agent:main:telegram:group:-1"
	lim := sessions.HistoryLimits{Count: 30, MaxBytes: 1 << 20}
	ctx := ctxT(t)
	var kept atomic.Int64
	run(t, 16, func(g int) error {
		h := logs[g%2]
		for i := range 10 {
			e := sessions.HistoryEntry{MessageID: fmt.Sprint(i*16 + g/2*2), SenderID: "u", At: time.Now(), Text: "x"}
			dup, err := h.Append(ctx, room, e, lim)
			if err != nil {
				return err
			}
			if !dup {
				kept.Add(1)
			}
		}
		return nil
	})
	if n := kept.Load(); n != 80 {
		t.Errorf("%d appends kept, want 80 (each message delivered to both replicas once)", n)
	}
	if n := logs[0].Len(room); n != 30 {
		t.Errorf("Len = %d, want the limit 30", n)
	}
	es, err := logs[1].Take(room, logs[0].Seq(), sessions.HistoryLimits{Count: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Seq <= es[i-1].Seq {
			t.Fatalf("seq %d after %d", es[i].Seq, es[i-1].Seq)
		}
	}
}

// TestRoomLogGoneIsBounded: removed entries are remembered for redelivery
// detection, the newest RoomGoneKeep of them; older ones are pruned.
func TestRoomLogGoneIsBounded(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	h := db.RoomLog(RoomLogOptions{})
	ctx := ctxT(t)
	const extra = 100
	// Bulk-load removed entries (fast), then let cuts prune.
	if _, err := db.pool.Exec(ctx, `INSERT INTO room_history (seq, room, message_id, at_ms, text_bytes, body, gone_seq)
		SELECT nextval('room_history_seq'), 'r'::bytea, convert_to('m' || i, 'UTF8'), 0, 1, '{}', nextval('room_history_gone_seq')
		FROM generate_series(1, $1) i`, RoomGoneKeep+extra); err != nil {
		t.Fatal(err)
	}
	lim := sessions.HistoryLimits{Count: 10}
	for i := range roomPruneEvery {
		if _, err := h.Append(ctx, "other", sessions.HistoryEntry{MessageID: fmt.Sprint("n", i), Text: "y"}, lim); err != nil {
			t.Fatal(err)
		}
		if err := h.Clear("other"); err != nil {
			t.Fatal(err)
		}
	}
	var gone int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM room_history WHERE gone_seq IS NOT NULL`).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if gone != RoomGoneKeep {
		t.Errorf("%d removed entries remembered, want %d", gone, RoomGoneKeep)
	}
	// The newest are remembered, the oldest forgotten.
	if dup, err := h.Append(ctx, "other", sessions.HistoryEntry{MessageID: fmt.Sprint("n", roomPruneEvery-1)}, lim); err != nil || !dup {
		t.Errorf("redelivery of the newest removed entry = %v, %v; want dup", dup, err)
	}
	if dup, err := h.Append(ctx, "r", sessions.HistoryEntry{MessageID: "m1"}, lim); err != nil || dup {
		t.Errorf("redelivery of a long-pruned entry = %v, %v; want kept", dup, err)
	}
}

// TestRoomLogTakeSeesEverythingUpToSeq: a Take up to a Seq read earlier
// sees every entry with a sequence number up to it, even while appends
// that drew lower numbers are still committing (they hold the room's
// lock, which Take waits for). Without that, a Cut after the Take would
// remove a message no turn ever saw.
func TestRoomLogTakeSeesEverythingUpToSeq(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	h := db.RoomLog(RoomLogOptions{})
	const room = "agent:main:telegram:group:-7"
	lim := sessions.HistoryLimits{Count: 100000}
	ctx := ctxT(t)
	type snap struct {
		seq uint64
		n   int
	}
	var (
		snaps []snap
		stop  atomic.Bool
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for !stop.Load() {
			s := h.Seq()
			es, err := h.Take(room, s, lim)
			if err != nil {
				t.Error(err)
				return
			}
			snaps = append(snaps, snap{s, len(es)})
		}
	}()
	run(t, 8, func(g int) error {
		for i := range 40 {
			if _, err := h.Append(ctx, room, sessions.HistoryEntry{MessageID: fmt.Sprint(g, "-", i), Text: "x"}, lim); err != nil {
				return err
			}
		}
		return nil
	})
	stop.Store(true)
	<-done
	for _, s := range snaps {
		es, err := h.Take(room, s.seq, lim)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != s.n {
			t.Fatalf("Take up to seq %d saw %d entries; %d have a seq up to it", s.seq, s.n, len(es))
		}
	}
	if len(snaps) < 5 {
		t.Errorf("only %d snapshots taken while appending", len(snaps))
	}
}
