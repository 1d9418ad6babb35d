package sessionstest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

func testRoomLimits(t *testing.T, f *rfix) {
	tests := []struct {
		room string
		lim  sessions.HistoryLimits
		n    int
		want string
	}{
		{"count", sessions.HistoryLimits{Count: 3, MaxBytes: 1000}, 6, "t3 t4 t5"},
		{"bytes", sessions.HistoryLimits{Count: 50, MaxBytes: 7}, 6, "t3 t4 t5"},
		{"under", sessions.HistoryLimits{Count: 10, MaxBytes: 1000}, 4, "t0 t1 t2 t3"},
		{"nobytes", sessions.HistoryLimits{Count: 2}, 5, "t3 t4"},
		{"zero", sessions.HistoryLimits{Count: 0, MaxBytes: 1000}, 4, ""},
	}
	check := func() {
		for _, tc := range tests {
			f.want("kept in room "+tc.room, f.texts(tc.room, f.h.Seq(), wide), tc.want)
			if n, want := f.h.Len(tc.room), len(strings.Fields(tc.want)); n != want {
				t.Errorf("Len(%s) = %d, want %d", tc.room, n, want)
			}
		}
		// Text beyond MaxBytes is cut on a rune boundary.
		f.want("cut text", f.texts("cut", f.h.Seq(), wide)+" "+f.texts("cut2", f.h.Seq(), wide), "h hél")
	}
	for _, tc := range tests {
		f.addN(tc.room, 0, tc.n, tc.lim)
	}
	e := entry(100)
	e.Text = "héllo"
	f.add("cut", e, sessions.HistoryLimits{Count: 5, MaxBytes: 2})
	e = entry(101)
	e.Text = "héllo"
	f.add("cut2", e, sessions.HistoryLimits{Count: 5, MaxBytes: 4})
	check()
	if st := f.h.Stats(); st.Rooms != 6 || st.Entries != 3+3+4+2+1+1 {
		t.Errorf("stats: %d rooms, %d entries; want 6, 14", st.Rooms, st.Entries)
	}
	f.reopen()
	check()
}

func testRoomRedelivery(t *testing.T, f *rfix) {
	if f.add(roomA, entry(1), wide) {
		t.Fatal("first append reported a duplicate")
	}
	if !f.add(roomA, entry(1), wide) {
		t.Error("redelivery of a kept message was kept again")
	}
	if f.add(roomB, entry(1), wide) {
		t.Error("the same message id in another room was taken for a redelivery")
	}
	noID := entry(2)
	noID.MessageID = ""
	if f.add(roomA, noID, wide) || f.add(roomA, noID, wide) {
		t.Error("messages without an id were taken for redeliveries")
	}
	f.want("kept", f.texts(roomA, f.h.Seq(), wide), "t1 t2 t2")
	// Taken and cut: a late redelivery is still recognised.
	f.must("Cut", f.h.Cut(roomA, f.h.Seq()))
	if !f.add(roomA, entry(1), wide) {
		t.Error("redelivery of a taken message was kept")
	}
	// Evicted: the same.
	one := sessions.HistoryLimits{Count: 1, MaxBytes: 100}
	f.add("evict", entry(5), one)
	f.add("evict", entry(6), one)
	if !f.add("evict", entry(5), one) {
		t.Error("redelivery of an evicted message was kept")
	}
	f.want("evict room", f.texts("evict", f.h.Seq(), wide), "t6")
	f.reopen()
	if !f.add(roomA, entry(1), wide) || !f.add(roomB, entry(1), wide) || !f.add("evict", entry(6), one) {
		t.Error("a redelivery after reopen was kept")
	}
	f.want("room A after reopen", f.texts(roomA, f.h.Seq(), wide), "")
}

func testRoomTakeCut(t *testing.T, f *rfix) {
	f.addN(roomA, 0, 3, wide)
	upTo := f.h.Seq()
	f.addN(roomA, 3, 2, wide)
	f.addN(roomB, 0, 1, wide)
	if s := f.h.Seq(); s <= upTo {
		t.Errorf("Seq %d after more appends, want > %d", s, upTo)
	}
	f.want("take up to seq", f.texts(roomA, upTo, wide), "t0 t1 t2")
	f.want("take 2", f.texts(roomA, upTo, sessions.HistoryLimits{Count: 2}), "t1 t2")
	f.want("take 4 bytes", f.texts(roomA, upTo, sessions.HistoryLimits{Count: 10, MaxBytes: 4}), "t1 t2")
	f.want("take 3 bytes", f.texts(roomA, upTo, sessions.HistoryLimits{Count: 10, MaxBytes: 3}), "t2")
	f.want("take none", f.texts(roomA, upTo, sessions.HistoryLimits{}), "")
	f.want("take of an empty room", f.texts("empty", f.h.Seq(), wide), "")
	es, err := f.h.Take(roomA, upTo, wide)
	f.must("Take", err)
	for i, e := range es {
		w := entry(i)
		if e.MessageID != w.MessageID || e.SenderID != w.SenderID || e.SenderName != w.SenderName || !e.At.Equal(w.At) || e.Seq == 0 {
			t.Errorf("entry %d = %+v, want %+v with a seq", i, e, w)
		}
	}
	// Taking removes nothing; cutting does.
	f.want("take again", f.texts(roomA, upTo, wide), "t0 t1 t2")
	f.must("Cut", f.h.Cut(roomA, upTo))
	f.must("Cut of nothing", f.h.Cut("empty", upTo))
	if n := f.h.Len(roomA); n != 2 {
		t.Errorf("Len after cut = %d, want 2", n)
	}
	f.want("after cut", f.texts(roomA, f.h.Seq(), wide), "t3 t4")
	f.want("other room", f.texts(roomB, f.h.Seq(), wide), "t0")
}

func testRoomClear(t *testing.T, f *rfix) {
	f.addN(roomA, 0, 6, wide)
	f.addN(roomB, 0, 2, wide)
	f.must("ClearBefore", f.h.ClearBefore(roomA, t0.Add(3*time.Second)))
	f.want("after ClearBefore", f.texts(roomA, f.h.Seq(), wide), "t3 t4 t5")
	f.must("ClearBefore of an empty room", f.h.ClearBefore("empty", t0.Add(time.Hour)))
	f.must("Clear", f.h.Clear(roomA))
	if n := f.h.Len(roomA); n != 0 {
		t.Errorf("Len after Clear = %d", n)
	}
	f.want("other room", f.texts(roomB, f.h.Seq(), wide), "t0 t1")
	// Entries leave in sequence order: an early message that arrived late
	// takes the ones added before it along.
	late := entry(1)
	late.MessageID = "late"
	f.addN("order", 10, 1, wide)
	f.add("order", late, wide)
	f.addN("order", 11, 1, wide)
	f.must("ClearBefore", f.h.ClearBefore("order", t0.Add(5*time.Second)))
	f.want("order after ClearBefore", f.texts("order", f.h.Seq(), wide), "t11")
	f.reopen()
	f.want("room A after reopen", f.texts(roomA, f.h.Seq(), wide), "")
	f.want("room B after reopen", f.texts(roomB, f.h.Seq(), wide), "t0 t1")
}

func testRoomHostile(t *testing.T, f *rfix) {
	texts := []string{"nul \x00 inside", "'; DROP TABLE room_history; --", "emoji 💬 and ключ", "%s%n"}
	for i, text := range texts {
		e := entry(i)
		e.Text, e.SenderName, e.MessageID = text, "name\x00"+text, "id'"+text
		f.add(roomA, e, wide)
	}
	bad := entry(9)
	bad.Text = "x\xffy"
	f.add(roomA, bad, wide)
	check := func() {
		es, err := f.h.Take(roomA, f.h.Seq(), wide)
		f.must("Take", err)
		want := append(append([]string(nil), texts...), "x\uFFFDy")
		if len(es) != len(want) {
			t.Fatalf("Take returned %d entries, want %d", len(es), len(want))
		}
		for i, e := range es {
			if e.Text != want[i] {
				t.Errorf("entry %d text %q, want %q", i, e.Text, want[i])
			}
			if i < len(texts) && (e.SenderName != "name\x00"+texts[i] || e.MessageID != "id'"+texts[i]) {
				t.Errorf("entry %d name %q id %q", i, e.SenderName, e.MessageID)
			}
		}
	}
	check()
	e := entry(0)
	e.MessageID = "id'" + texts[0]
	if !f.add(roomA, e, wide) {
		t.Error("redelivery of a hostile message id was kept")
	}
	for _, room := range []string{"room'; --", "room\x00nul"} {
		f.addN(room, 0, 2, wide)
		f.want("hostile room "+fmt.Sprintf("%q", room), f.texts(room, f.h.Seq(), wide), "t0 t1")
	}
	if dup, err := f.h.Append(f.ctx, "", entry(1), wide); dup || err != nil || f.h.Len("") != 0 {
		t.Errorf("Append to the empty room = %v, %v, len %d; want nothing kept", dup, err, f.h.Len(""))
	}
	f.reopen()
	check()
}

func testRoomConcurrent(t *testing.T, f *rfix) {
	const each = 10
	capped := sessions.HistoryLimits{Count: 50, MaxBytes: 1 << 20}
	var shared atomic.Int64
	parallel(goroutines, func(g int) {
		for i := range each {
			room := roomA
			if i%2 == 1 {
				room = roomB
			}
			e := entry(g*each + i)
			if dup, err := f.h.Append(f.ctx, room, e, wide); dup || err != nil {
				t.Errorf("Append(%s) = %v, %v", e.MessageID, dup, err)
			}
			if _, err := f.h.Append(f.ctx, "capped", e, capped); err != nil {
				t.Errorf("Append(capped): %v", err)
			}
			s := entry(1000 + i)
			dup, err := f.h.Append(f.ctx, roomA, s, wide)
			if err != nil {
				t.Errorf("Append(shared): %v", err)
			} else if !dup {
				shared.Add(1)
			}
		}
	})
	if n := shared.Load(); n != each {
		t.Errorf("%d racing appends of %d messages were kept, want %d", n, each, each)
	}
	want := map[string]int{roomA: goroutines*each/2 + each, roomB: goroutines * each / 2, "capped": 50}
	seqs := map[uint64]string{}
	for room, n := range want {
		if got := f.h.Len(room); got != n {
			t.Errorf("Len(%s) = %d, want %d", room, got, n)
		}
		es, err := f.h.Take(room, f.h.Seq(), sessions.HistoryLimits{Count: 1000})
		f.must("Take", err)
		for _, e := range es {
			if other, ok := seqs[e.Seq]; ok {
				t.Errorf("seq %d in %s and %s", e.Seq, room, other)
			}
			seqs[e.Seq] = room
		}
	}
}

func testRoomReopen(t *testing.T, f *rfix) {
	f.addN(roomA, 0, 5, wide)
	f.addN(roomB, 0, 3, wide)
	f.must("Cut", f.h.Cut(roomB, f.h.Seq()))
	f.addN(roomB, 3, 1, wide)
	seq := f.h.Seq()
	before := f.texts(roomA, seq, wide) + " | " + f.texts(roomB, seq, wide)
	f.reopen()
	if s := f.h.Seq(); s < seq {
		t.Errorf("Seq after reopen = %d, want ≥ %d", s, seq)
	}
	f.want("after reopen", f.texts(roomA, seq, wide)+" | "+f.texts(roomB, seq, wide), before)
	f.addN(roomA, 5, 1, wide)
	if s := f.h.Seq(); s <= seq {
		t.Errorf("Seq of a new append after reopen = %d, want > %d", s, seq)
	}
	f.want("new append after reopen", f.texts(roomA, f.h.Seq(), wide), "t0 t1 t2 t3 t4 t5")
	if st := f.h.Stats(); st.Rooms != 2 || st.Entries != 7 {
		t.Errorf("stats: %d rooms, %d entries; want 2, 7", st.Rooms, st.Entries)
	}
}
