package sessionstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// PairingOpener returns a new, empty pairing state, or with share (a state
// it returned earlier) a second handle on share's storage, as another
// process would open it. It releases what it opened when t ends.
type PairingOpener func(t *testing.T, share sessions.PairingState) sessions.PairingState

// TestPairing runs the conformance suite of sessions.PairingState against
// the states open returns, as parallel subtests.
func TestPairing(t *testing.T, open PairingOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open PairingOpener)
	}{
		{"EmptyUntilUpdated", testPairingEmpty},
		{"UpdateLoadReopen", testPairingUpdate},
		{"NoChangeStoresNothing", testPairingNoChange},
		{"ErrorStoresNothing", testPairingFnError},
		{"ConcurrentUpdatesLoseNothing", testPairingConcurrent},
		{"TwoHandlesSeeEachOther", testPairingTwoHandles},
		{"HostileChannels", testPairingHostileChannels},
		{"HostileData", testPairingHostileData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// pairingFixture is one case's state and context.
type pairingFixture struct {
	t    *testing.T
	open PairingOpener
	ps   sessions.PairingState
	ctx  context.Context
}

func newPairingFixture(t *testing.T, open PairingOpener) *pairingFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &pairingFixture{t: t, open: open, ps: open(t, nil), ctx: ctx}
}

func (f *pairingFixture) load(ps sessions.PairingState, channel string) pairstate.Data {
	f.t.Helper()
	d, err := ps.LoadPairing(f.ctx, channel)
	if err != nil {
		f.t.Fatalf("LoadPairing(%q): %v", channel, err)
	}
	return d
}

func (f *pairingFixture) update(ps sessions.PairingState, channel string, fn func(*pairstate.Data)) {
	f.t.Helper()
	err := ps.UpdatePairing(f.ctx, channel, func(d *pairstate.Data) (bool, error) {
		fn(d)
		return true, nil
	})
	if err != nil {
		f.t.Fatalf("UpdatePairing(%q): %v", channel, err)
	}
}

func (f *pairingFixture) channels(ps sessions.PairingState) []string {
	f.t.Helper()
	l, err := ps.PairingChannels(f.ctx)
	if err != nil {
		f.t.Fatalf("PairingChannels: %v", err)
	}
	return l
}

// request is a pending request of channel made at t0+min minutes.
func request(channel, account, sender string, min int) pairstate.Request {
	at := t0.Add(time.Duration(min) * time.Minute)
	return pairstate.Request{Channel: channel, AccountID: account, Code: fmt.Sprintf("CODE%04d", min),
		SenderID: sender, SenderName: "name of " + sender, ChatID: "chat-" + sender, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
}

func approval(channel, account, sender string, min int) pairstate.Approval {
	return pairstate.Approval{Channel: channel, AccountID: account, SenderID: sender,
		SenderName: "name of " + sender, Code: "APPROVED", ApprovedAt: t0.Add(time.Duration(min) * time.Minute)}
}

// emptyIsNil compares an empty slice equal to a nil one: a backend may
// return either for "none".
var emptyIsNil = cmpopts.EquateEmpty()

func testPairingEmpty(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	if d := f.load(f.ps, "telegram"); len(d.Pending)+len(d.Allowed) != 0 {
		t.Errorf("LoadPairing of a new state = %+v, want empty", d)
	}
	if l := f.channels(f.ps); len(l) != 0 {
		t.Errorf("PairingChannels of a new state = %q, want none", l)
	}
}

func testPairingUpdate(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	want := pairstate.Data{
		Pending: []pairstate.Request{request("discord", "default", "u3", 3), request("discord", "default", "u1", 1),
			request("discord", "bot2", "u2", 2)},
		Allowed: []pairstate.Approval{approval("discord", "default", "u9", 9), approval("discord", "bot2", "u0", 0)},
	}
	f.update(f.ps, "discord", func(d *pairstate.Data) { *d = want.Clone() })
	f.update(f.ps, "telegram", func(d *pairstate.Data) {
		d.Allowed = append(d.Allowed, approval("telegram", "default", "42", 5))
	})
	// The order of both lists is kept; channels do not mix.
	if diff := cmp.Diff(want, f.load(f.ps, "discord"), emptyIsNil); diff != "" {
		t.Errorf("LoadPairing(discord) (-want +got):\n%s", diff)
	}
	// What LoadPairing returned belongs to the caller.
	d := f.load(f.ps, "discord")
	d.Pending[0].Code, d.Allowed = "CHANGED", nil
	if diff := cmp.Diff(want, f.load(f.ps, "discord"), emptyIsNil); diff != "" {
		t.Errorf("changing a loaded copy changed the state (-want +got):\n%s", diff)
	}
	// The next update starts from what was stored.
	f.update(f.ps, "discord", func(d *pairstate.Data) {
		if diff := cmp.Diff(want, *d, emptyIsNil); diff != "" {
			t.Errorf("UpdatePairing's fn got (-want +got):\n%s", diff)
		}
		d.Pending = d.Pending[1:]
		d.Allowed = append(d.Allowed, approval("discord", "default", "u3", 10))
	})
	want.Pending = want.Pending[1:]
	want.Allowed = append(want.Allowed, approval("discord", "default", "u3", 10))
	if diff := cmp.Diff([]string{"discord", "telegram"}, f.channels(f.ps)); diff != "" {
		t.Errorf("PairingChannels (-want +got):\n%s", diff)
	}
	// Another handle (a restart, another process) reads the same.
	other := f.open(t, f.ps)
	if diff := cmp.Diff(want, f.load(other, "discord"), emptyIsNil); diff != "" {
		t.Errorf("LoadPairing(discord) through a second handle (-want +got):\n%s", diff)
	}
	if got := f.load(other, "telegram"); len(got.Allowed) != 1 || got.Allowed[0].SenderID != "42" || len(got.Pending) != 0 {
		t.Errorf("LoadPairing(telegram) through a second handle = %+v", got)
	}
	// Emptying a channel stores the empty state.
	f.update(other, "discord", func(d *pairstate.Data) { *d = pairstate.Data{} })
	if got := f.load(f.ps, "discord"); len(got.Pending)+len(got.Allowed) != 0 {
		t.Errorf("after emptying: %+v", got)
	}
}

func testPairingNoChange(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	err := f.ps.UpdatePairing(f.ctx, "telegram", func(d *pairstate.Data) (bool, error) {
		d.Pending = append(d.Pending, request("telegram", "a", "u1", 1))
		return false, nil
	})
	if err != nil {
		t.Fatalf("UpdatePairing without a change: %v", err)
	}
	if d := f.load(f.ps, "telegram"); len(d.Pending) != 0 {
		t.Errorf("fn reported no change, yet %+v was stored", d)
	}
	if l := f.channels(f.ps); len(l) != 0 {
		t.Errorf("PairingChannels after an update without a change = %q", l)
	}
	f.update(f.ps, "telegram", func(d *pairstate.Data) {
		d.Pending = append(d.Pending, request("telegram", "a", "u1", 1))
	})
	_ = f.ps.UpdatePairing(f.ctx, "telegram", func(d *pairstate.Data) (bool, error) {
		d.Pending = nil
		return false, nil
	})
	if d := f.load(f.open(t, f.ps), "telegram"); len(d.Pending) != 1 {
		t.Errorf("an update without a change removed data: %+v", d)
	}
}

func testPairingFnError(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	f.update(f.ps, "telegram", func(d *pairstate.Data) {
		d.Pending = append(d.Pending, request("telegram", "a", "u1", 1))
	})
	full := errors.New("full")
	err := f.ps.UpdatePairing(f.ctx, "telegram", func(d *pairstate.Data) (bool, error) {
		d.Pending = append(d.Pending, request("telegram", "a", "u2", 2))
		return true, full
	})
	if !errors.Is(err, full) {
		t.Errorf("UpdatePairing = %v, want fn's error", err)
	}
	if d := f.load(f.open(t, f.ps), "telegram"); len(d.Pending) != 1 || d.Pending[0].SenderID != "u1" {
		t.Errorf("after fn failed: %+v, want the earlier state", d)
	}
}

// testPairingConcurrent: 20 goroutines on two handles (two processes) each
// add a request to one channel; none is lost, and each fn sees a state no
// other update is changing (the count it saw is the count before it).
func testPairingConcurrent(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	handles := []sessions.PairingState{f.ps, f.open(t, f.ps)}
	seen := make([]int, goroutines)
	parallel(goroutines, func(i int) {
		err := handles[i%2].UpdatePairing(f.ctx, "telegram", func(d *pairstate.Data) (bool, error) {
			seen[i] = len(d.Pending)
			d.Pending = append(d.Pending, request("telegram", "a", fmt.Sprint("u", i), i))
			return true, nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	d := f.load(f.open(t, f.ps), "telegram")
	if len(d.Pending) != goroutines {
		t.Fatalf("%d requests stored, want %d: an update was lost", len(d.Pending), goroutines)
	}
	got := map[string]bool{}
	for _, r := range d.Pending {
		got[r.SenderID] = true
	}
	counts := map[int]bool{}
	for i := range goroutines {
		if !got[fmt.Sprint("u", i)] {
			t.Errorf("request of u%d lost", i)
		}
		counts[seen[i]] = true
	}
	if len(counts) != goroutines {
		t.Errorf("fns saw %d distinct states for %d serialised updates: two ran on the same state", len(counts), goroutines)
	}
}

func testPairingTwoHandles(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	other := f.open(t, f.ps)
	// Both handles read first (a cache would hold the empty state).
	f.load(f.ps, "telegram")
	f.load(other, "telegram")
	for i := range 5 {
		a, b := f.ps, other
		if i%2 == 1 {
			a, b = b, a
		}
		f.update(a, "telegram", func(d *pairstate.Data) {
			d.Allowed = append(d.Allowed, approval("telegram", "a", fmt.Sprint("u", i), i))
		})
		if got := f.load(b, "telegram"); len(got.Allowed) != i+1 {
			t.Fatalf("update %d by one handle: the other sees %d approvals, want %d", i, len(got.Allowed), i+1)
		}
	}
}

func testPairingHostileChannels(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	bad := []string{"", ".", "..", "../x", "a/b", `a\b`, "UPPER", "a\x00b", "-x", " x", "x ", "telegram:bot",
		strings.Repeat("a", 65), "é", "a'; DROP TABLE pairing_requests; --"}
	for _, ch := range bad {
		if _, err := f.ps.LoadPairing(f.ctx, ch); err == nil {
			t.Errorf("LoadPairing(%q) accepted a bad channel name", ch)
		}
		called := false
		err := f.ps.UpdatePairing(f.ctx, ch, func(*pairstate.Data) (bool, error) { called = true; return true, nil })
		if err == nil || called {
			t.Errorf("UpdatePairing(%q) = %v (fn called: %v), want a channel name error", ch, err, called)
		} else if !strings.Contains(err.Error(), "channel") {
			t.Errorf("UpdatePairing(%q) = %v: the error does not say the channel is wrong", ch, err)
		}
	}
	// The longest valid name works.
	long := strings.Repeat("z", 64)
	f.update(f.ps, long, func(d *pairstate.Data) { d.Allowed = append(d.Allowed, approval(long, "a", "u", 1)) })
	if diff := cmp.Diff([]string{long}, f.channels(f.open(t, f.ps))); diff != "" {
		t.Errorf("PairingChannels (-want +got):\n%s", diff)
	}
}

func testPairingHostileData(t *testing.T, open PairingOpener) {
	f := newPairingFixture(t, open)
	// Anything a chat can send that is valid text is stored exactly.
	odd := []string{"'; DROP TABLE pairing_requests; --", "../../etc/passwd", `"quoted" \ back`, "日本語 🙂", "\t\n", ""}
	var want pairstate.Data
	for i, s := range odd {
		r := request("telegram", s, s, i)
		r.SenderName, r.ChatID = s, s
		want.Pending = append(want.Pending, r)
		a := approval("telegram", s, s, i)
		a.SenderName, a.Code = s, s
		want.Allowed = append(want.Allowed, a)
	}
	f.update(f.ps, "telegram", func(d *pairstate.Data) { *d = want.Clone() })
	if diff := cmp.Diff(want, f.load(f.open(t, f.ps), "telegram"), emptyIsNil); diff != "" {
		t.Errorf("odd text did not round-trip (-want +got):\n%s", diff)
	}
	// Data a backend cannot store exactly, or of another channel, is
	// refused and nothing is stored.
	refused := map[string]func(d *pairstate.Data){
		"NUL in a sender name": func(d *pairstate.Data) {
			r := request("telegram", "a", "nul", 50)
			r.SenderName = "a\x00b"
			d.Pending = append(d.Pending, r)
		},
		"invalid UTF-8 in a sender id": func(d *pairstate.Data) {
			d.Allowed = append(d.Allowed, approval("telegram", "a", "\xff\xfe", 50))
		},
		"a request of another channel": func(d *pairstate.Data) {
			d.Pending = append(d.Pending, request("discord", "a", "x", 50))
		},
		"an approval of another channel": func(d *pairstate.Data) {
			d.Allowed = append(d.Allowed, approval("", "a", "x", 50))
		},
		"a huge sender name": func(d *pairstate.Data) {
			r := request("telegram", "a", "big", 50)
			r.SenderName = strings.Repeat("x", 1<<20)
			d.Pending = append(d.Pending, r)
		},
	}
	for what, change := range refused {
		err := f.ps.UpdatePairing(f.ctx, "telegram", func(d *pairstate.Data) (bool, error) {
			change(d)
			return true, nil
		})
		if err == nil {
			t.Errorf("%s: stored, want an error", what)
		}
	}
	if diff := cmp.Diff(want, f.load(f.open(t, f.ps), "telegram"), emptyIsNil); diff != "" {
		t.Errorf("after refused updates (-want +got):\n%s", diff)
	}
}
