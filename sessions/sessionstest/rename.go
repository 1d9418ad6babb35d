package sessionstest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Index.RenameKey: a Telegram group upgraded to a supergroup keeps its
// session under the new chat's key (issue 25).

func testRename(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	from, to := f.key("-100"), f.key("-1001234")
	first, _ := f.begin(from, origin("first"))
	f.clk.Advance(time.Minute)
	if _, err := f.idx.Reset(f.ctx, from, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	cur, _ := f.begin(from, origin("second"))
	if _, err := f.idx.Patch(f.ctx, from, func(e *sessions.Entry) error {
		e.Label, e.ModelOverride, e.GroupActivation = "ops room", "m2", "always"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Routine counters not flushed yet move with the session.
	f.idx.AddCounters(from, sessions.Counters{InputTokens: 5, OutputTokens: 6, TotalTokens: 11, Messages: 2, Model: "m"})
	before := f.get(from)
	if before.MessageCount != 2 || before.TotalTokens != 11 {
		t.Fatalf("before the move: %d messages, %d tokens; want 2, 11", before.MessageCount, before.TotalTokens)
	}
	f.clk.Advance(time.Minute)

	moved, err := f.idx.RenameKey(f.ctx, from, to)
	if err != nil {
		t.Fatalf("RenameKey: %v", err)
	}
	want := before
	want.SessionKey, want.UpdatedAt = to.String(), f.clk.Now()
	if diff := cmp.Diff(want, moved); diff != "" {
		t.Errorf("RenameKey returned (-want +got):\n%s", diff)
	}
	f.same("RenameKey", moved)
	f.absent(from)
	if e, ok, err := f.idx.GetByID(cur.SessionID); err != nil || !ok || e.SessionKey != to.String() {
		t.Errorf("GetByID after the move = %s, %v, %v; want key %s", e.SessionKey, ok, err, to)
	}
	if got := ids(f.archived(to)); !slices.Equal(got, []string{first.SessionID}) {
		t.Errorf("Archived(to) = %v, want the session from's reset archived [%s]", got, first.SessionID)
	}
	if got := f.archived(from); len(got) != 0 {
		t.Errorf("Archived(from) = %v, want none", ids(got))
	}
	if l, err := f.idx.List(); err != nil || len(l) != 1 || l[0].SessionKey != to.String() {
		t.Errorf("List after the move = %v, %v; want only %s", l, err, to)
	}

	// Repeated (a redelivered event, a second service message, a restart):
	// nothing changes.
	f.clk.Advance(time.Minute)
	again, err := f.idx.RenameKey(f.ctx, from, to)
	if err != nil {
		t.Fatalf("RenameKey repeated: %v", err)
	}
	if diff := cmp.Diff(moved, again); diff != "" {
		t.Errorf("RenameKey repeated changed the entry (-first +again):\n%s", diff)
	}
	f.absent(from)

	// The conversation continues in the moved session.
	next, info := f.begin(to, origin("third"))
	if info.Created || next.SessionID != cur.SessionID || next.Label != "ops room" || next.MessageCount != 2 {
		t.Errorf("Begin(to) after the move = %s (created %v, label %q, %d messages); want session %s continued",
			next.SessionID, info.Created, next.Label, next.MessageCount, cur.SessionID)
	}

	// Another process sees the moved session, and only there.
	f.flush()
	other := f.reopen()
	if e, ok, err := other.Get(to); err != nil || !ok || e.SessionID != cur.SessionID {
		t.Errorf("second handle Get(to) = %s, %v, %v; want %s", e.SessionID, ok, err, cur.SessionID)
	}
	if _, ok, err := other.Get(from); err != nil || ok {
		t.Errorf("second handle Get(from) = %v, %v; want no entry", ok, err)
	}
	if got := ids(archivedOf(t, other, f, "-1001234")); !slices.Equal(got, []string{first.SessionID}) {
		t.Errorf("second handle Archived(to) = %v, want [%s]", got, first.SessionID)
	}
}

func testRenameRefusals(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	from, to, none, other := f.key("-1"), f.key("-2"), f.key("-3"), f.key("-4")
	f.begin(from, origin("from"))
	f.begin(to, origin("to"))
	a, b := f.get(from), f.get(to)

	// The new key's conversation started before the move: both stay.
	_, err := f.idx.RenameKey(f.ctx, from, to)
	if !errors.Is(err, sessions.ErrKeyTaken) {
		t.Errorf("RenameKey onto a key with its own session: %v, want sessions.ErrKeyTaken", err)
	}
	if diff := cmp.Diff(a, f.get(from)); diff != "" {
		t.Errorf("a refused RenameKey changed from (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(b, f.get(to)); diff != "" {
		t.Errorf("a refused RenameKey changed to (-before +after):\n%s", diff)
	}
	_, err = f.idx.RenameKey(f.ctx, none, other)
	wantNotFound(t, "RenameKey between two keys without a session", err)
	f.absent(other)
	if _, err := f.idx.RenameKey(f.ctx, from, from); err == nil {
		t.Error("RenameKey of a key to itself: no error")
	}
	foreign, err := routing.PeerKey(f.idx.AgentID()+"x", "telegram", "", routing.Group, "-9")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.idx.RenameKey(f.ctx, from, foreign); err == nil {
		t.Error("RenameKey to another agent's key: no error")
	}
	if _, err := f.idx.RenameKey(f.ctx, foreign, none); err == nil {
		t.Error("RenameKey from another agent's key: no error")
	}
	if _, err := f.idx.RenameKey(f.ctx, routing.Key{}, none); err == nil {
		t.Error("RenameKey from an empty key: no error")
	}
	f.absent(none)
	if diff := cmp.Diff(a, f.get(from)); diff != "" {
		t.Errorf("refused RenameKeys changed from (-before +after):\n%s", diff)
	}
}

// testRenameConcurrent moves one session from two handles at once (the
// two service messages of one upgrade, handled by two replicas or twice
// by one): both succeed, and the session is under the new key once.
func testRenameConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	handles := []sessions.Index{f.idx, f.reopen()}
	const pairs = 4
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		want = map[string]string{} // new key → session id
	)
	for i := range pairs {
		from, to := f.key("-"+string(rune('1'+i))), f.key("-100"+string(rune('1'+i)))
		e, _ := f.begin(from, origin("g"))
		want[to.String()] = e.SessionID
		for _, h := range handles {
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := h.RenameKey(f.ctx, from, to)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("concurrent RenameKey(%s, %s): %v", from, to, err)
					} else if got.SessionID != e.SessionID || got.SessionKey != to.String() {
						t.Errorf("concurrent RenameKey(%s, %s) = %s under %s, want %s", from, to, got.SessionID, got.SessionKey, e.SessionID)
					}
				}()
			}
		}
	}
	wg.Wait()
	for _, h := range handles {
		l, err := h.List()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range l {
			got[e.SessionKey] = e.SessionID
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("entries after concurrent moves (-want +got):\n%s", diff)
		}
	}
}
