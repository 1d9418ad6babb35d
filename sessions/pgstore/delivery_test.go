package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gateway/gateway/sessions"
)

// settable is a clock tests move by hand, safe for concurrent use.
type settable struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settable) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *settable) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newDelivery(t *testing.T, db *DB, o DeliveryOptions) *Delivery {
	t.Helper()
	d := db.Delivery(o)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func rec(id string) sessions.Record {
	return sessions.Record{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:1", Payload: json.RawMessage(`{"text":"hi"}`)}
}

func mustAccept(t *testing.T, d *Delivery, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if dup, err := d.Accept(context.Background(), rec(id)); err != nil || dup {
			t.Fatalf("Accept(%s) = %v, %v", id, dup, err)
		}
	}
}

func isDup(t *testing.T, d *Delivery, id string) bool {
	t.Helper()
	dup, err := d.Accept(context.Background(), rec(id))
	if err != nil {
		t.Fatalf("Accept(%s): %v", id, err)
	}
	return dup
}

// TestDeliveryWriteFailure: a mark that cannot be written waits in memory,
// in order, and is written when the database takes writes again; Health
// reports the failure meanwhile and Accept refuses.
func TestDeliveryWriteFailure(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := newDelivery(t, db, DeliveryOptions{})
	var failing atomic.Bool
	d.fault = func(op string) error {
		if failing.Load() {
			return errors.New("could not extend file: No space left on device")
		}
		return nil
	}
	mustAccept(t, d, "a", "b", "c")
	failing.Store(true)
	for what, err := range map[string]error{"Start": d.Start("a"), "Done": d.Done("b"), "Fail": d.Fail("a")} {
		if err != nil {
			t.Errorf("%s while failing = %v, want nil (kept and retried)", what, err)
		}
	}
	if err := d.Health(); !errors.Is(err, sessions.ErrStorage) || !strings.Contains(err.Error(), "No space left") {
		t.Errorf("Health while failing = %v, want the failure wrapping ErrStorage", err)
	}
	if _, err := d.Accept(context.Background(), rec("d")); !errors.Is(err, sessions.ErrStorage) {
		t.Errorf("Accept while marks wait = %v, want ErrStorage", err)
	}
	if st := d.Stats(); st.WriteFailures == 0 {
		t.Error("stats count no write failure")
	}
	failing.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for d.Health() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.Health(); err != nil {
		t.Fatalf("Health after the database recovered: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	next := newDelivery(t, db, DeliveryOptions{})
	ps, err := next.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%s/%d/%d", p.ID, p.Starts, p.Failures))
	}
	if want := "a/1/1 c/0/0"; strings.Join(got, " ") != want {
		t.Errorf("pending after the retried marks = %v, want %s", got, want)
	}
	if !isDup(t, next, "b") {
		t.Error("the retried Done was lost")
	}
}

// TestDeliveryAcceptFailureRecovers: a failed Accept alone (no mark
// waiting) makes Health fail until the loop's probe write succeeds.
func TestDeliveryAcceptFailureRecovers(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := newDelivery(t, db, DeliveryOptions{})
	var failing atomic.Bool
	failing.Store(true)
	d.fault = func(string) error {
		if failing.Load() {
			return errors.New("read-only transaction")
		}
		return nil
	}
	if _, err := d.Accept(context.Background(), rec("a")); !errors.Is(err, sessions.ErrStorage) {
		t.Fatalf("Accept = %v, want ErrStorage", err)
	}
	if d.Health() == nil {
		t.Fatal("Health nil after a failed Accept")
	}
	failing.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for d.Health() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.Health(); err != nil {
		t.Fatalf("Health after recovery: %v", err)
	}
	mustAccept(t, d, "a")
}

// TestDeliveryCloseReportsUnwritten: Close says how many marks it could
// not write.
func TestDeliveryCloseReportsUnwritten(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := db.Delivery(DeliveryOptions{})
	mustAccept(t, d, "a")
	d.fault = func(string) error { return errors.New("connection refused") }
	if err := d.Start("a"); err != nil {
		t.Fatal(err)
	}
	err := d.Close()
	if err == nil || !strings.Contains(err.Error(), "1 marks could not be written") {
		t.Errorf("Close = %v, want it to name the unwritten mark", err)
	}
	if err := d.Start("a"); err == nil {
		t.Error("a mark on a closed handle succeeded")
	}
}

// TestDeliveryPrune: completed ids older than DoneRetention are forgotten
// unless among the newest DoneKeep; younger ones are all remembered.
func TestDeliveryPrune(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	clk := &settable{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	d := newDelivery(t, db, DeliveryOptions{Now: clk.Now, DoneKeep: 2})
	ctx := context.Background()
	old := []string{"o1", "o2", "o3", "o4"}
	mustAccept(t, d, old...)
	for _, id := range old {
		if err := d.Done(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range old {
		if !isDup(t, d, id) {
			t.Errorf("%s forgotten within the retention", id)
		}
	}
	clk.Advance(sessions.DoneRetention + time.Minute)
	if err := d.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	// The newest two are kept past the retention.
	for i, id := range old {
		if dup := isDup(t, d, id); dup != (i >= 2) {
			t.Errorf("%s remembered = %v, want %v", id, dup, i >= 2)
		}
	}
	young := []string{"y1", "y2", "y3"}
	mustAccept(t, d, young...)
	if err := d.Done(young...); err != nil {
		t.Fatal(err)
	}
	if err := d.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range young {
		if !isDup(t, d, id) {
			t.Errorf("%s forgotten within the retention", id)
		}
	}
	// Past the retention and no longer among the newest two.
	if isDup(t, d, "o4") {
		t.Error("o4 is past the retention and not among the newest two, yet remembered")
	}
}

// TestDeliveryClaimSkipLocked: concurrent claimers never get the same
// record; a record held by a live handle's lease is not claimable until
// the lease runs out; Renew extends it.
func TestDeliveryClaimSkipLocked(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	clk := &settable{t: time.Now().UTC()}
	o := DeliveryOptions{Now: clk.Now, Lease: time.Minute}
	first := newDelivery(t, db, o)
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%02d", n-i) // accept order is not id order
	}
	mustAccept(t, first, ids...)
	ctx := ctxT(t)
	other := newDelivery(t, db, o)
	if got, err := other.Claim(ctx, n); err != nil || len(got) != 0 {
		t.Fatalf("Claim of records under a live lease = %d, %v; want none", len(got), err)
	}
	if err := first.Close(); err != nil { // releases its leases
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{}
	claimers := make([]*Delivery, 8)
	for i := range claimers {
		claimers[i] = db.Delivery(o)
	}
	run(t, len(claimers), func(w int) error {
		d := claimers[w]
		for {
			recs, err := d.Claim(ctx, 3)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				return nil
			}
			mu.Lock()
			for _, r := range recs {
				if prev, dup := got[r.ID]; dup {
					mu.Unlock()
					return fmt.Errorf("record %s claimed by %s and %s", r.ID, prev, d.Owner())
				}
				got[r.ID] = d.Owner()
			}
			mu.Unlock()
		}
	})
	if len(got) != n {
		t.Errorf("%d records claimed, want %d", len(got), n)
	}
	for _, d := range claimers {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The claimers closed: their leases were released; a rescuer takes all,
	// in accept order.
	rescuer := newDelivery(t, db, o)
	again, err := rescuer.Claim(ctx, n)
	if err != nil || len(again) != n {
		t.Fatalf("reclaimed %d records (%v), want %d", len(again), err, n)
	}
	if again[0].ID != ids[0] || again[n-1].ID != ids[n-1] || string(again[0].Payload) != `{"text":"hi"}` {
		t.Errorf("reclaimed %s..%s (%s), want %s..%s in accept order", again[0].ID, again[n-1].ID, again[0].Payload, ids[0], ids[n-1])
	}
	// Renewed leases hold; expired ones do not.
	clk.Advance(40 * time.Second)
	if err := rescuer.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(40 * time.Second) // 80 s after the claim, 40 s after the renewal
	if got, err := other.Claim(ctx, n); err != nil || len(got) != 0 {
		t.Fatalf("Claim of renewed records = %d, %v; want none", len(got), err)
	}
	clk.Advance(time.Minute)
	if got, err := other.Claim(ctx, n); err != nil || len(got) != n {
		t.Fatalf("Claim after the lease ran out = %d, %v; want %d", len(got), err, n)
	}
	if ps, err := other.Pending(); err != nil || len(ps) != 0 {
		t.Errorf("Pending of the claimer = %d, %v; claimed records are its own", len(ps), err)
	}
}

// TestDeliveryRefusesWhatTextCannotHold: besides ids (the conformance
// suite), the text fields and JSON of records, replies and drafts are
// checked before anything is written, with errors naming the field.
func TestDeliveryRefusesWhatTextCannotHold(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := newDelivery(t, db, DeliveryOptions{})
	ctx := ctxT(t)
	r := rec("a")
	r.SessionKey = "agent:main:\x00"
	if _, err := d.Accept(ctx, r); err == nil || !strings.Contains(err.Error(), "session key") {
		t.Errorf("Accept with a NUL session key = %v, want an error naming the session key", err)
	}
	r = rec("a")
	r.AgentID = "m\xffain"
	if _, err := d.Accept(ctx, r); err == nil || !strings.Contains(err.Error(), "agent id") {
		t.Errorf("Accept with an invalid UTF-8 agent = %v, want an error naming the agent id", err)
	}
	rp := sessions.Reply{ID: "rp", Target: json.RawMessage(`{"chat":`), Chunks: []string{"x"}}
	if err := d.Ready(rp); err == nil || !strings.Contains(err.Error(), "target is not valid JSON") {
		t.Errorf("Ready with a broken target = %v", err)
	}
	rp = sessions.Reply{ID: "rp", EntryID: "e\x00", Chunks: []string{"x"}}
	if err := d.Ready(rp); err == nil || !strings.Contains(err.Error(), "entry id") {
		t.Errorf("Ready with a NUL entry id = %v", err)
	}
	if err := d.Draft(sessions.Draft{ID: "d", MessageID: "\x00"}); err == nil || !strings.Contains(err.Error(), "message id") {
		t.Errorf("Draft with a NUL message id = %v", err)
	}
	if st := d.Stats(); st.Lines != 0 || st.Pending != 0 || st.Replies != 0 {
		t.Errorf("something was written: %+v", st)
	}
	if err := d.Health(); err != nil {
		t.Errorf("refused input made the journal unhealthy: %v", err)
	}
}

// TestDeliveryCrashRecovery: a process that dies closes nothing. The next
// one (a new pool) finds what it left: the records without an outcome, the
// reply from its first unmarked chunk (marks committed without waiting for
// the WAL flush are visible at once), the draft on screen. A replica's
// Claim leaves the records alone while the dead process's lease runs.
func TestDeliveryCrashRecovery(t *testing.T) {
	t.Parallel()
	_, url := openTest(t)
	ctx := ctxT(t)
	deadDB, err := Open(ctx, Options{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	dead := deadDB.Delivery(DeliveryOptions{})
	mustAccept(t, dead, "r1", "r2", "r3")
	for _, err := range []error{
		dead.Start("r1", "r2"),
		dead.Ready(sessions.Reply{ID: "rp", Records: []string{"r1"}, Target: json.RawMessage(`{}`), Chunks: []string{"a", "b"}}),
		dead.Sent("rp", 1),
		dead.Draft(sessions.Draft{ID: "d1", Target: json.RawMessage(`{}`), MessageID: "77"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = dead.Close(); deadDB.Close() })
	dead.lock.drop() // its process dies: the server ends its lock's session

	nextDB, err := Open(ctx, Options{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nextDB.Close)
	next := newDelivery(t, nextDB, DeliveryOptions{})
	ps, err := next.Pending()
	if err != nil || len(ps) != 2 || ps[0].ID != "r2" || ps[0].Starts != 1 || ps[1].ID != "r3" {
		t.Errorf("pending = %+v, %v; want r2 (one start), r3", ps, err)
	}
	rs, err := next.Replies()
	if err != nil || len(rs) != 1 || rs[0].Sent != 1 || rs[0].Chunks[1] != "b" {
		t.Errorf("replies = %+v, %v; want rp from chunk 1", rs, err)
	}
	ds, err := next.Drafts()
	if err != nil || len(ds) != 1 || ds[0].MessageID != "77" {
		t.Errorf("drafts = %+v, %v; want d1", ds, err)
	}
	if got, err := next.Claim(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("Claim under the dead process's live lease = %d, %v; want none", len(got), err)
	}
	if got, err := next.ClaimReplies(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("ClaimReplies under the dead process's live lease = %d, %v; want none", len(got), err)
	}
	// Once the lease ran out (a replica's clock past it), both are claimable.
	later := newDelivery(t, nextDB, DeliveryOptions{Now: func() time.Time { return time.Now().Add(DefaultLease + time.Second) }})
	if got, err := later.Claim(ctx, 10); err != nil || len(got) != 2 || got[0].ID != "r2" || got[1].ID != "r3" {
		t.Errorf("Claim after the lease = %+v, %v; want r2, r3", got, err)
	}
	if got, err := later.ClaimReplies(ctx, 10); err != nil || len(got) != 1 || got[0].ID != "rp" || got[0].Sent != 1 {
		t.Errorf("ClaimReplies after the lease = %+v, %v; want rp with 1 sent", got, err)
	}
	if got, err := later.ClaimReplies(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("second ClaimReplies = %d, %v; want none (its own now)", len(got), err)
	}
	if err := next.Sent("rp", 2); err != nil {
		t.Fatal(err)
	}
	if !isDup(t, next, "r1") {
		t.Error("r1 not done after its reply was delivered")
	}
}

// TestDeliveryRefusedWriteIsNotAnOutage: a write the server refuses for
// its content is returned to the caller, not retried forever, and leaves
// the handle healthy.
func TestDeliveryRefusedWriteIsNotAnOutage(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	d := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, d, "a")
	d.fault = func(op string) error {
		if op == "start" || op == "accept" {
			return &pgconn.PgError{Code: "22P05", Message: "unsupported Unicode escape sequence"}
		}
		return nil
	}
	if err := d.Start("a"); err == nil || !strings.Contains(err.Error(), "unsupported Unicode") {
		t.Errorf("Start refused by the server = %v, want its error", err)
	}
	if _, err := d.Accept(ctxT(t), rec("b")); err == nil || errors.Is(err, sessions.ErrStorage) {
		t.Errorf("Accept refused by the server = %v, want its error, not ErrStorage", err)
	}
	if err := d.Health(); err != nil {
		t.Errorf("Health after refused writes = %v, want nil", err)
	}
	d.fault = nil
	if err := d.Done("a"); err != nil {
		t.Fatal(err)
	}
	if !isDup(t, d, "a") {
		t.Error("a later mark was not written")
	}
}

// Stored tells a caller whose Accept failed whether the record was stored
// and is its to run: pending, unanswered, this handle's.
func TestDeliveryStored(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	mine := newDelivery(t, db, DeliveryOptions{})
	other := newDelivery(t, db, DeliveryOptions{})
	mustAccept(t, mine, "a", "b")
	for _, c := range []struct {
		d    *Delivery
		id   string
		want bool
	}{{mine, "a", true}, {other, "a", false}, {mine, "unknown", false}} {
		if got, err := c.d.Stored(ctx, c.id); err != nil || got != c.want {
			t.Errorf("Stored(%s) by %s = %v, %v; want %v", c.id, c.d.Owner(), got, err, c.want)
		}
	}
	if err := mine.Done("a"); err != nil {
		t.Fatal(err)
	}
	if err := mine.Ready(sessions.Reply{ID: "rp", Records: []string{"b"}, AgentID: "main",
		SessionKey: "agent:main:telegram:group:1", Target: json.RawMessage(`{}`), Chunks: []string{"re"}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} { // done; answered by a reply
		if got, err := mine.Stored(ctx, id); err != nil || got {
			t.Errorf("Stored(%s) after its outcome = %v, %v; want false", id, got, err)
		}
	}
}
