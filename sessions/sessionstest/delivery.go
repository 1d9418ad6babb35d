package sessionstest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gateway/gateway/sessions"
)

// TestDelivery is the conformance suite of sessions.Delivery, the ingress
// journal, reply outbox and drafts (SPEC §3.7): every backend's journal
// must pass it. The behaviour is the files journal's (filestore.Journal).
//
// Hostile ids: a record, reply or draft id that is empty, not valid UTF-8
// or holds a NUL byte is refused with an error naming the id
// (sessions.CheckID); marks and lookups of such ids do nothing. Chunk text
// and JSON payloads keep any character, NUL included; invalid UTF-8 in a
// chunk becomes U+FFFD byte by byte (encoding/json's rule, which both
// backends store through).

// DeliveryOptions are what a case asks of a new Delivery.
type DeliveryOptions struct {
	// Now is the journal's clock (acceptedAt, createdAt, done times). It
	// returns whole seconds in UTC, which every backend stores exactly.
	Now func() time.Time
	// Share, when set, is a Delivery this opener returned earlier and whose
	// close the case has called: the new one is the next handle on the same
	// storage, as the process started after a crash would open it.
	Share sessions.Delivery
}

// DeliveryOpener returns a new, empty Delivery (or, with o.Share, a new
// handle on Share's storage) and the func that closes it as a process
// exit would. The opener releases whatever the case did not close when t
// ends.
type DeliveryOpener func(t *testing.T, o DeliveryOptions) (d sessions.Delivery, close func() error)

// TestDelivery runs the Delivery suite against the journals open returns.
func TestDelivery(t *testing.T, open DeliveryOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, f *dfix)
	}{
		{"AcceptAndDuplicates", testAcceptDup},
		{"DoneRetention", testDoneRetention},
		{"Counters", testRecordCounters},
		{"PendingOrderAndFresh", testPendingOrder},
		{"ReplyStoredThenRecovered", testReplyRecovery},
		{"ReplyEdgeCases", testReplyEdges},
		{"DraftsRecovered", testDrafts},
		{"ConcurrentNoLostUpdate", testDeliveryConcurrent},
		{"HostileIDs", testDeliveryHostile},
		{"HealthAndStats", testDeliveryHealth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{t: t0}
			d, closeFn := open(t, DeliveryOptions{Now: clk.Now})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			t.Cleanup(cancel)
			c.run(t, &dfix{t: t, open: open, clk: clk, d: d, close: closeFn, ctx: ctx})
		})
	}
}

// dfix is one case's journal handle and clock.
type dfix struct {
	t     *testing.T
	open  DeliveryOpener
	clk   *clock
	d     sessions.Delivery
	close func() error
	ctx   context.Context
}

// reopen closes the handle and opens the next one on the same storage.
func (f *dfix) reopen() {
	f.t.Helper()
	if err := f.close(); err != nil {
		f.t.Fatalf("close: %v", err)
	}
	f.d, f.close = f.open(f.t, DeliveryOptions{Now: f.clk.Now, Share: f.d})
}

func (f *dfix) accept(id string) {
	f.t.Helper()
	f.acceptRec(record(id))
}

func (f *dfix) acceptRec(r sessions.Record) {
	f.t.Helper()
	dup, err := f.d.Accept(f.ctx, r)
	if err != nil || dup {
		f.t.Fatalf("Accept(%q) = %v, %v; want a new record", r.ID, dup, err)
	}
}

func (f *dfix) wantDup(id string, want bool) {
	f.t.Helper()
	dup, err := f.d.Accept(f.ctx, record(id))
	if err != nil {
		f.t.Fatalf("Accept(%q): %v", id, err)
	}
	if dup != want {
		f.t.Errorf("Accept(%q) dup = %v, want %v", id, dup, want)
	}
}

func (f *dfix) must(what string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

func (f *dfix) pending() []sessions.Record {
	f.t.Helper()
	recs, err := f.d.Pending()
	if err != nil {
		f.t.Fatalf("Pending: %v", err)
	}
	return recs
}

// pendingIDs lists Pending as id/starts/failures.
func (f *dfix) pendingIDs() []string {
	f.t.Helper()
	var out []string
	for _, r := range f.pending() {
		out = append(out, fmt.Sprintf("%s/%d/%d", r.ID, r.Starts, r.Failures))
	}
	return out
}

func (f *dfix) replies() []sessions.Reply {
	f.t.Helper()
	rs, err := f.d.Replies()
	if err != nil {
		f.t.Fatalf("Replies: %v", err)
	}
	return rs
}

func (f *dfix) drafts() []string {
	f.t.Helper()
	ds, err := f.d.Drafts()
	if err != nil {
		f.t.Fatalf("Drafts: %v", err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func (f *dfix) wantList(what string, want, got []string) {
	f.t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		f.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// record is a journal record of the main agent with a small payload.
func record(id string) sessions.Record {
	return sessions.Record{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Payload: json.RawMessage(`{"text":"hello","chat":-100}`)}
}

// reply answers records with chunks.
func reply(id string, records []string, chunks ...string) sessions.Reply {
	return sessions.Reply{ID: id, Records: records, AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Target: json.RawMessage(`{"channel":"telegram","chatId":"-100"}`), Chunks: chunks, EntryID: "e-" + id}
}

// sameJSON reports whether a and b encode the same value.
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Errorf("%q is not JSON: %v", a, err)
		return false
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Errorf("%q is not JSON: %v", b, err)
		return false
	}
	return cmp.Equal(va, vb)
}
