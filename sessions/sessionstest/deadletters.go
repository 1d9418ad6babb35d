package sessionstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transfer"
)

// DeadLettersOpener returns a new, empty dead letter store, or with share
// (a store it returned earlier) a second handle on share's storage, as
// another process would open it. It releases what it opened when t ends.
type DeadLettersOpener func(t *testing.T, share sessions.DeadLetters) sessions.DeadLetters

// TestDeadLetters runs the conformance suite of sessions.DeadLetters
// against the stores open returns, as parallel subtests.
func TestDeadLetters(t *testing.T, open DeadLettersOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open DeadLettersOpener)
	}{
		{"BuriedListedNewestFirst", testDeadBuryList},
		{"BoundDropsOldest", testDeadBound},
		{"BoundKeepsResubmitting", testDeadBoundKeepsResubmitting},
		{"ClaimOnceAcrossHandles", testDeadClaimOnce},
		{"DiscardAndSettle", testDeadRemove},
		{"RefusedInput", testDeadRefused},
		{"HostileIDs", testDeadHostileIDs},
		{"CopiedByMigrate", testDeadCopy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

var deadT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// deadMessage is a message letter given up at deadT0+i minutes.
func deadMessage(i int) sessions.DeadLetter {
	id := fmt.Sprintf("dl-%03d", i)
	return sessions.DeadLetter{ID: id, Kind: sessions.DeadMessage, Reason: fmt.Sprintf("it failed %d times", 3),
		At: deadT0.Add(time.Duration(i) * time.Minute), AgentID: "main", SessionKey: "agent:main:telegram:direct:42",
		Record: &sessions.Record{ID: "telegram:default:42:" + id, AgentID: "main", SessionKey: "agent:main:telegram:direct:42",
			Payload: json.RawMessage(`{"inbound":{"text":"hi  there","z":1,"a":2}}`), Failures: 3, AcceptedAt: deadT0}}
}

func deadReply(i int) sessions.DeadLetter {
	dl := deadMessage(i)
	dl.Kind, dl.Record, dl.Reason = sessions.DeadReply, nil, "send: 403 Forbidden: bot was blocked by the user"
	dl.Reply = &sessions.Reply{ID: "reply-" + dl.ID, Records: []string{"r1"}, AgentID: "main", SessionKey: dl.SessionKey,
		Target: json.RawMessage(`{"channel":"telegram","chatId":"42"}`), Chunks: []string{"one", "two"}, Sent: 1, CreatedAt: deadT0}
	return dl
}

func bury(t *testing.T, d sessions.DeadLetters, dl sessions.DeadLetter, keep int) int {
	t.Helper()
	n, err := d.Bury(context.Background(), dl, keep)
	if err != nil {
		t.Fatalf("Bury %s: %v", dl.ID, err)
	}
	return n
}

func listDead(t *testing.T, d sessions.DeadLetters) []sessions.DeadLetter {
	t.Helper()
	ls, err := d.DeadLetters(context.Background())
	if err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	return ls
}

// testDeadBuryList: letters come back as buried (state failed, reason,
// time, record payload byte for byte, reply with its sent count), newest
// first, from another handle too; a repeated Bury changes nothing.
func testDeadBuryList(t *testing.T, open DeadLettersOpener) {
	d := open(t, nil)
	m, r := deadMessage(1), deadReply(2)
	bury(t, d, m, 10)
	bury(t, d, r, 10)
	again := m
	again.Reason = "changed"
	bury(t, d, again, 10)
	m.State, r.State = sessions.DeadFailed, sessions.DeadFailed
	want := []sessions.DeadLetter{r, m}
	for _, h := range []sessions.DeadLetters{d, open(t, d)} {
		if diff := cmp.Diff(want, listDead(t, h)); diff != "" {
			t.Fatalf("listed letters (-want +got):\n%s", diff)
		}
	}
}

// testDeadBound: past keep, the oldest letters go, whichever order they
// were buried in.
func testDeadBound(t *testing.T, open DeadLettersOpener) {
	d := open(t, nil)
	dropped := 0
	for _, i := range []int{5, 1, 7, 3, 6, 2, 4} {
		dropped += bury(t, d, deadMessage(i), 4)
	}
	ls := listDead(t, d)
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	if diff := cmp.Diff([]string{"dl-007", "dl-006", "dl-005", "dl-004"}, ids); diff != "" || dropped != 3 {
		t.Fatalf("kept (-want +got):\n%s\ndropped %d, want 3", diff, dropped)
	}
}

// testDeadBoundKeepsResubmitting: a letter being resubmitted (claimed,
// its work not yet in the journal: a resubmit that failed or a process
// that died, finished at the next start) is never the one dropped to make
// room; the oldest failed letters go instead, and the resubmit can still
// settle it.
func testDeadBoundKeepsResubmitting(t *testing.T, open DeadLettersOpener) {
	d := open(t, nil)
	for i := 1; i <= 3; i++ {
		bury(t, d, deadMessage(i), 3)
	}
	if _, err := d.ClaimDeadLetter(context.Background(), "dl-001"); err != nil {
		t.Fatalf("ClaimDeadLetter: %v", err)
	}
	dropped := bury(t, d, deadMessage(4), 3) + bury(t, d, deadMessage(5), 3)
	var ids []string
	for _, l := range listDead(t, d) {
		ids = append(ids, l.ID+"/"+l.State)
	}
	want := []string{"dl-005/failed", "dl-004/failed", "dl-001/resubmitting"}
	if diff := cmp.Diff(want, ids); diff != "" || dropped != 2 {
		t.Fatalf("kept (-want +got):\n%s\ndropped %d, want 2", diff, dropped)
	}
	if err := d.RemoveDeadLetter(context.Background(), "dl-001", sessions.DeadResubmitting); err != nil {
		t.Fatalf("settling the resubmit: %v", err)
	}
}

// testDeadClaimOnce: of concurrent claims through several handles exactly
// one wins; the others get ErrDeadLetterClaimed; the letter shows
// resubmitting; an unknown id is ErrNoDeadLetter.
func testDeadClaimOnce(t *testing.T, open DeadLettersOpener) {
	d := open(t, nil)
	bury(t, d, deadMessage(1), 0)
	handles := []sessions.DeadLetters{d, open(t, d), open(t, d)}
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		won, refuse int
		other       []error
	)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dl, err := handles[i%len(handles)].ClaimDeadLetter(context.Background(), "dl-001")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && dl.ID == "dl-001" && dl.State == sessions.DeadResubmitting && dl.Record != nil:
				won++
			case errors.Is(err, sessions.ErrDeadLetterClaimed):
				refuse++
			default:
				other = append(other, fmt.Errorf("claim: %+v, %w", dl, err))
			}
		}()
	}
	wg.Wait()
	if won != 1 || refuse != 11 || other != nil {
		t.Fatalf("claims: %d won, %d refused, others %v; want 1, 11, none", won, refuse, other)
	}
	if ls := listDead(t, d); len(ls) != 1 || ls[0].State != sessions.DeadResubmitting {
		t.Fatalf("after the claim: %+v", ls)
	}
	if _, err := d.ClaimDeadLetter(context.Background(), "dl-404"); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Fatalf("claim of an unknown letter: %v, want ErrNoDeadLetter", err)
	}
}

// testDeadRemove: a failed letter is discarded in state failed, a claimed
// one only in state resubmitting (a discard of a claimed letter is
// refused); removing twice is ErrNoDeadLetter.
func testDeadRemove(t *testing.T, open DeadLettersOpener) {
	ctx := context.Background()
	d := open(t, nil)
	bury(t, d, deadMessage(1), 0)
	bury(t, d, deadReply(2), 0)
	if _, err := d.ClaimDeadLetter(ctx, "dl-002"); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveDeadLetter(ctx, "dl-002", sessions.DeadFailed); !errors.Is(err, sessions.ErrDeadLetterClaimed) {
		t.Fatalf("discard of a claimed letter: %v, want ErrDeadLetterClaimed", err)
	}
	if err := d.RemoveDeadLetter(ctx, "dl-001", sessions.DeadResubmitting); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Fatalf("settling an unclaimed letter: %v, want ErrNoDeadLetter", err)
	}
	if err := d.RemoveDeadLetter(ctx, "dl-001", sessions.DeadFailed); err != nil {
		t.Fatalf("discard: %v", err)
	}
	if err := open(t, d).RemoveDeadLetter(ctx, "dl-002", sessions.DeadResubmitting); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if ls := listDead(t, d); len(ls) != 0 {
		t.Fatalf("left after discard and settle: %+v", ls)
	}
	if err := d.RemoveDeadLetter(ctx, "dl-001", sessions.DeadFailed); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Fatalf("second discard: %v, want ErrNoDeadLetter", err)
	}
}

// testDeadRefused: letters a store could not keep are refused with an
// error naming the problem.
func testDeadRefused(t *testing.T, open DeadLettersOpener) {
	d := open(t, nil)
	for name, dl := range map[string]sessions.DeadLetter{
		"empty id":      {Kind: sessions.DeadMessage, Record: &sessions.Record{ID: "x"}},
		"unknown kind":  {ID: "a", Kind: "parcel"},
		"no record":     {ID: "a", Kind: sessions.DeadMessage},
		"no reply":      {ID: "a", Kind: sessions.DeadReply},
		"NUL in the id": {ID: "a\x00b", Kind: sessions.DeadMessage, Record: &sessions.Record{ID: "x"}},
		"bad UTF-8 id":  {ID: "a\xffb", Kind: sessions.DeadMessage, Record: &sessions.Record{ID: "x"}},
	} {
		if _, err := d.Bury(context.Background(), dl, 0); err == nil {
			t.Errorf("%s: Bury accepted %+v", name, dl)
		}
	}
	if ls := listDead(t, d); len(ls) != 0 {
		t.Fatalf("refused letters were stored: %+v", ls)
	}
}

// testDeadHostileIDs: an id no letter can have (NUL, bad UTF-8, which
// PostgreSQL text refuses) is no letter on every backend, never a driver
// error: `gateway deliveries discard` answers "no such dead letter".
func testDeadHostileIDs(t *testing.T, open DeadLettersOpener) {
	ctx := context.Background()
	d := open(t, nil)
	bury(t, d, deadMessage(1), 0)
	for _, id := range []string{"a\x00b", "a\xffb"} {
		if _, err := d.ClaimDeadLetter(ctx, id); !errors.Is(err, sessions.ErrNoDeadLetter) {
			t.Errorf("ClaimDeadLetter(%q) = %v, want ErrNoDeadLetter", id, err)
		}
		if err := d.RemoveDeadLetter(ctx, id, sessions.DeadFailed); !errors.Is(err, sessions.ErrNoDeadLetter) {
			t.Errorf("RemoveDeadLetter(%q) = %v, want ErrNoDeadLetter", id, err)
		}
	}
	if ls := listDead(t, d); len(ls) != 1 {
		t.Errorf("letters after hostile ids: %d, want 1", len(ls))
	}
}

// testDeadCopy: `storage migrate` (transfer.CopyDeadLetters) copies every
// letter as it is, twice changes nothing, and refuses a letter a resubmit
// left half done.
func testDeadCopy(t *testing.T, open DeadLettersOpener) {
	ctx := context.Background()
	from, to := open(t, nil), open(t, nil)
	for i := range 3 {
		bury(t, from, deadMessage(i), 0)
	}
	bury(t, from, deadReply(5), 0)
	for range 2 {
		if n, err := transfer.CopyDeadLetters(ctx, from, to); err != nil || n != 4 {
			t.Fatalf("CopyDeadLetters = %d, %v; want 4", n, err)
		}
	}
	if diff := cmp.Diff(listDead(t, from), listDead(t, to)); diff != "" {
		t.Fatalf("copied letters (-source +target):\n%s", diff)
	}
	if _, err := from.ClaimDeadLetter(ctx, "dl-001"); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.CopyDeadLetters(ctx, from, open(t, nil)); err == nil {
		t.Fatal("a letter being resubmitted was copied")
	}
}
