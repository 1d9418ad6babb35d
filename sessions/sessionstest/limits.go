package sessionstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// LimitsOpener returns a new, empty counter store, or with share (a store
// it returned earlier) a second handle on share's storage, as another
// process (a replica) would open it. It releases what it opened when t
// ends.
type LimitsOpener func(t *testing.T, share sessions.LimitCounters) sessions.LimitCounters

// TestLimits runs the conformance suite of sessions.LimitCounters against
// the stores open returns, as parallel subtests; the hold cases run for
// stores that implement sessions.LimitReserver (PostgreSQL: holds shared
// by replicas). The files store has none: package limits keeps holds in
// memory, where one process owns the counters, and tests them there.
func TestLimits(t *testing.T, open LimitsOpener) {
	_, reserves := open(t, nil).(sessions.LimitReserver)
	cases := []struct {
		name string
		run  func(t *testing.T, open LimitsOpener)
	}{
		{"AbsentUntilCharged", testLimitsAbsent},
		{"AddReturnsTotals", testLimitsAdd},
		{"ConcurrentAddsLoseNothing", testLimitsConcurrent},
		{"PruneEndedWindows", testLimitsPrune},
		{"HostileSubjectsStoredApart", testLimitsHostile},
		{"RefusedInput", testLimitsRefused},
	}
	if reserves {
		cases = append(cases, struct {
			name string
			run  func(t *testing.T, open LimitsOpener)
		}{"HoldsCountForEveryHandle", testLimitsHold})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

type limitFixture struct {
	t    *testing.T
	open LimitsOpener
	l    sessions.LimitCounters
	ctx  context.Context
}

func newLimitFixture(t *testing.T, open LimitsOpener) *limitFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &limitFixture{t: t, open: open, l: open(t, nil), ctx: ctx}
}

// day is the window of 2026-03-29 starting 04:00 Berlin (a DST day: 23 h).
var (
	limitDayStart = time.Date(2026, 3, 29, 2, 0, 0, 0, time.UTC).Unix()
	limitDayEnd   = time.Date(2026, 3, 30, 1, 0, 0, 0, time.UTC).Unix()
)

func dayKey(scope, subject string) sessions.LimitKey {
	return sessions.LimitKey{Scope: scope, Subject: subject, Period: "day", Start: limitDayStart}
}

func dayDelta(scope, subject string, tokens int64, cost float64) sessions.LimitDelta {
	return sessions.LimitDelta{Key: dayKey(scope, subject), End: limitDayEnd, Tokens: tokens, CostUSD: cost}
}

func (f *limitFixture) add(l sessions.LimitCounters, ds ...sessions.LimitDelta) map[sessions.LimitKey]sessions.LimitTotal {
	f.t.Helper()
	got, err := l.AddUsage(f.ctx, ds)
	if err != nil {
		f.t.Fatalf("AddUsage: %v", err)
	}
	return got
}

func (f *limitFixture) usage(l sessions.LimitCounters, keys ...sessions.LimitKey) map[sessions.LimitKey]sessions.LimitTotal {
	f.t.Helper()
	got, err := l.LimitUsage(f.ctx, keys)
	if err != nil {
		f.t.Fatalf("LimitUsage: %v", err)
	}
	return got
}

func testLimitsAbsent(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	if got := f.usage(f.l, dayKey("sender", "main/telegram:1")); len(got) != 0 {
		t.Errorf("LimitUsage of a new store = %v, want none", got)
	}
	if got := f.usage(f.l); len(got) != 0 {
		t.Errorf("LimitUsage of no keys = %v, want none", got)
	}
	if got := f.add(f.l); len(got) != 0 {
		t.Errorf("AddUsage of nothing = %v, want none", got)
	}
}

func testLimitsAdd(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	sender, room := dayKey("sender", "main/telegram:1"), dayKey("room", "main/telegram:-100")
	month := sessions.LimitKey{Scope: "sender", Subject: "main/telegram:1", Period: "month", Start: limitDayStart}
	got := f.add(f.l, dayDelta("sender", "main/telegram:1", 100, 0.25), dayDelta("room", "main/telegram:-100", 100, 0.25),
		sessions.LimitDelta{Key: month, End: limitDayEnd + 86400*30, Tokens: 7, CostUSD: 0.5})
	want := map[sessions.LimitKey]sessions.LimitTotal{
		sender: {Tokens: 100, CostUSD: 0.25}, room: {Tokens: 100, CostUSD: 0.25}, month: {Tokens: 7, CostUSD: 0.5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first AddUsage (-want +got):\n%s", diff)
	}
	// Two deltas of one key in one call are merged; the totals add up.
	got = f.add(f.l, dayDelta("sender", "main/telegram:1", 50, 0.5), dayDelta("sender", "main/telegram:1", 1, 0))
	if diff := cmp.Diff(map[sessions.LimitKey]sessions.LimitTotal{sender: {Tokens: 151, CostUSD: 0.75}}, got); diff != "" {
		t.Errorf("second AddUsage (-want +got):\n%s", diff)
	}
	// A zero charge creates nothing wrong and changes nothing.
	f.add(f.l, dayDelta("sender", "main/telegram:1", 0, 0))
	other := f.open(t, f.l)
	want[sender] = sessions.LimitTotal{Tokens: 151, CostUSD: 0.75}
	next := sessions.LimitKey{Scope: "sender", Subject: "main/telegram:1", Period: "day", Start: limitDayEnd}
	if diff := cmp.Diff(want, f.usage(other, sender, room, month, next)); diff != "" {
		t.Errorf("LimitUsage through a second handle (-want +got):\n%s", diff)
	}
	// A charge through the second handle shows in the first one's totals.
	f.add(other, dayDelta("sender", "main/telegram:1", 9, 0.25))
	got = f.add(f.l, dayDelta("sender", "main/telegram:1", 0, 0))
	if g := got[sender]; g.Tokens != 160 || g.CostUSD != 1 {
		t.Errorf("total after the other handle's charge = %+v, want 160 tokens, $1", g)
	}
}

// testLimitsConcurrent: 20 goroutines on two handles charge one counter
// 10 times each; no charge is lost.
func testLimitsConcurrent(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	handles := []sessions.LimitCounters{f.l, f.open(t, f.l)}
	const rounds = 10
	parallel(goroutines, func(i int) {
		for r := range rounds {
			ds := []sessions.LimitDelta{dayDelta("agent", "main", 3, 0.125), dayDelta("sender", fmt.Sprint("main/web:", i), 1, 0)}
			if _, err := handles[(i+r)%2].AddUsage(f.ctx, ds); err != nil {
				t.Error(err)
			}
		}
	})
	got := f.usage(f.open(t, f.l), dayKey("agent", "main"), dayKey("sender", "main/web:0"))
	want := map[sessions.LimitKey]sessions.LimitTotal{
		dayKey("agent", "main"):        {Tokens: 3 * rounds * goroutines, CostUSD: 0.125 * rounds * goroutines},
		dayKey("sender", "main/web:0"): {Tokens: rounds},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after concurrent charges (-want +got): a charge was lost\n%s", diff)
	}
}

func testLimitsPrune(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	old := sessions.LimitDelta{Key: sessions.LimitKey{Scope: "room", Subject: "r", Period: "day", Start: limitDayStart - 86400},
		End: limitDayStart, Tokens: 1}
	f.add(f.l, old, dayDelta("room", "r", 2, 0))
	n, err := f.l.PruneLimits(f.ctx, limitDayStart)
	if err != nil || n != 1 {
		t.Fatalf("PruneLimits = %d, %v; want 1 removed", n, err)
	}
	got := f.usage(f.open(t, f.l), old.Key, dayKey("room", "r"))
	if diff := cmp.Diff(map[sessions.LimitKey]sessions.LimitTotal{dayKey("room", "r"): {Tokens: 2}}, got); diff != "" {
		t.Errorf("after pruning (-want +got):\n%s", diff)
	}
	if n, err := f.l.PruneLimits(f.ctx, limitDayStart); err != nil || n != 0 {
		t.Errorf("second PruneLimits = %d, %v; want 0", n, err)
	}
}

func testLimitsHostile(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	subjects := []string{"..", "../x", "a/b", "a\\b", "/etc/passwd", " ", "'; DROP TABLE limit_counters; --",
		"日本語", "A", "a", strings.Repeat("z", sessions.MaxLimitSubject)}
	for i, s := range subjects {
		f.add(f.l, dayDelta("sender", s, int64(i+1), 0))
	}
	other := f.open(t, f.l)
	for i, s := range subjects {
		got := f.usage(other, dayKey("sender", s))
		if g := got[dayKey("sender", s)]; g.Tokens != int64(i+1) {
			t.Errorf("subject %q: %d tokens, want %d", s, g.Tokens, i+1)
		}
	}
}

func testLimitsRefused(t *testing.T, open LimitsOpener) {
	f := newLimitFixture(t, open)
	good := dayDelta("sender", "s", 1, 0)
	bad := []struct {
		what string
		edit func(d *sessions.LimitDelta)
	}{
		{"empty scope", func(d *sessions.LimitDelta) { d.Key.Scope = "" }},
		{"empty subject", func(d *sessions.LimitDelta) { d.Key.Subject = "" }},
		{"NUL in subject", func(d *sessions.LimitDelta) { d.Key.Subject = "a\x00b" }},
		{"invalid UTF-8 subject", func(d *sessions.LimitDelta) { d.Key.Subject = "\xff" }},
		{"long subject", func(d *sessions.LimitDelta) { d.Key.Subject = strings.Repeat("z", sessions.MaxLimitSubject+1) }},
		{"period week", func(d *sessions.LimitDelta) { d.Key.Period = "week" }},
		{"negative start", func(d *sessions.LimitDelta) { d.Key.Start = -1 }},
		{"end before start", func(d *sessions.LimitDelta) { d.End = d.Key.Start }},
		{"negative tokens", func(d *sessions.LimitDelta) { d.Tokens = -1 }},
		{"negative cost", func(d *sessions.LimitDelta) { d.CostUSD = -0.5 }},
	}
	for _, b := range bad {
		d := good
		b.edit(&d)
		if _, err := f.l.AddUsage(f.ctx, []sessions.LimitDelta{good, d}); err == nil {
			t.Errorf("AddUsage with %s: stored, want an error", b.what)
		} else if !strings.Contains(err.Error(), "limit counter") {
			t.Errorf("AddUsage with %s = %v: the error does not name the limit counter", b.what, err)
		}
	}
	if got := f.usage(f.l, good.Key); len(got) != 0 {
		t.Errorf("a refused batch stored part of itself: %v", got)
	}
	if _, err := f.l.LimitUsage(f.ctx, []sessions.LimitKey{{Scope: "sender", Subject: "", Period: "day"}}); err == nil {
		t.Errorf("LimitUsage with an empty subject: no error")
	}
}
