package sessionstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestRoomLog is the conformance suite of sessions.RoomLog, the room
// history of group rooms: every backend's history must pass it. The
// behaviour is the files history's (filestore.RoomHistory): per-room limits
// by count and bytes, oldest out; redeliveries (same room and message id,
// kept or recently removed) dropped; Take up to a sequence within limits;
// Cut, Clear, ClearBefore; one global sequence. Names and texts keep any
// character, NUL included; invalid UTF-8 becomes U+FFFD byte by byte
// (encoding/json's rule).

// RoomLogOptions are what a case asks of a new RoomLog.
type RoomLogOptions struct {
	// Share, when set, is a RoomLog this opener returned earlier and whose
	// close the case has called: the new one is the next handle on the same
	// storage, as the process started after a crash would open it.
	Share sessions.RoomLog
}

// RoomLogOpener returns a new, empty RoomLog (or, with o.Share, a new
// handle on Share's storage) and the func that closes it. The opener
// releases whatever the case did not close when t ends.
type RoomLogOpener func(t *testing.T, o RoomLogOptions) (h sessions.RoomLog, close func() error)

// TestRoomLog runs the RoomLog suite against the histories open returns.
func TestRoomLog(t *testing.T, open RoomLogOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, f *rfix)
	}{
		{"Limits", testRoomLimits},
		{"Redelivery", testRoomRedelivery},
		{"TakeAndCut", testRoomTakeCut},
		{"ClearAndClearBefore", testRoomClear},
		{"HostileText", testRoomHostile},
		{"Concurrent", testRoomConcurrent},
		{"SurvivesReopen", testRoomReopen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, closeFn := open(t, RoomLogOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			t.Cleanup(cancel)
			c.run(t, &rfix{t: t, open: open, h: h, close: closeFn, ctx: ctx})
		})
	}
}

// rfix is one case's history handle.
type rfix struct {
	t     *testing.T
	open  RoomLogOpener
	h     sessions.RoomLog
	close func() error
	ctx   context.Context
}

const (
	roomA = "agent:main:telegram:group:-100"
	roomB = "agent:main:discord:channel:42:thread:7"
)

// wide keeps everything a case adds.
var wide = sessions.HistoryLimits{Count: 1000, MaxBytes: 1 << 20}

func (f *rfix) reopen() {
	f.t.Helper()
	if err := f.close(); err != nil {
		f.t.Fatalf("close: %v", err)
	}
	f.h, f.close = f.open(f.t, RoomLogOptions{Share: f.h})
}

// entry is message i of a room: id "m<i>", text "t<i>", sent at t0+i s.
func entry(i int) sessions.HistoryEntry {
	return sessions.HistoryEntry{MessageID: fmt.Sprint("m", i), SenderID: "7", SenderName: "Ann",
		At: t0.Add(time.Duration(i) * time.Second), Text: fmt.Sprint("t", i)}
}

func (f *rfix) add(room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) bool {
	f.t.Helper()
	dup, err := f.h.Append(f.ctx, room, e, lim)
	if err != nil {
		f.t.Fatalf("Append(%q, %q): %v", room, e.MessageID, err)
	}
	return dup
}

func (f *rfix) addN(room string, from, n int, lim sessions.HistoryLimits) {
	f.t.Helper()
	for i := from; i < from+n; i++ {
		if f.add(room, entry(i), lim) {
			f.t.Fatalf("Append(%q, m%d) reported a duplicate", room, i)
		}
	}
}

// texts is what Take returns, texts joined by spaces.
func (f *rfix) texts(room string, upTo uint64, lim sessions.HistoryLimits) string {
	f.t.Helper()
	es, err := f.h.Take(room, upTo, lim)
	if err != nil {
		f.t.Fatalf("Take(%q): %v", room, err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
		if i > 0 && e.Seq <= es[i-1].Seq {
			f.t.Errorf("Take(%q): seq %d after %d: not oldest first", room, e.Seq, es[i-1].Seq)
		}
	}
	return strings.Join(out, " ")
}

func (f *rfix) want(what, got, want string) {
	f.t.Helper()
	if got != want {
		f.t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func (f *rfix) must(what string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}
