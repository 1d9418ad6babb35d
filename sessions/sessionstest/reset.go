package sessionstest

import (
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// wantKept fails unless Begin at the clock's time keeps key's session.
func (f *fixture) wantKept(what string, k routing.Key, id string) sessions.Entry {
	f.t.Helper()
	e, info := f.begin(k, origin("kept"))
	if e.SessionID != id || info != (sessions.BeginInfo{}) {
		f.t.Fatalf("%s: Begin gave %s %+v, want session %s kept", what, e.SessionID, info, id)
	}
	return e
}

// wantRollover fails unless Begin at the clock's time rolls key's session
// old over for reason, which expired at expired.
func (f *fixture) wantRollover(what string, k routing.Key, old sessions.Entry, reason string, expired time.Time) sessions.Entry {
	f.t.Helper()
	now := f.clk.Now()
	e, info := f.begin(k, origin("new day"))
	if info.Created || info.ResetReason != reason || info.Previous != old.SessionID || !info.ExpiredAt.Equal(expired) {
		f.t.Fatalf("%s: BeginInfo %+v, want reason %q, previous %s, expired at %v", what, info, reason, old.SessionID, expired)
	}
	if e.SessionID == old.SessionID || e.SessionKey != old.SessionKey {
		f.t.Fatalf("%s: entry %s %s, want a new session of %s", what, e.SessionKey, e.SessionID, old.SessionKey)
	}
	if !e.SessionStartedAt.Equal(now) || !e.LastInteractionAt.Equal(now) || !e.UpdatedAt.Equal(now) || !e.CreatedAt.Equal(old.CreatedAt) {
		f.t.Errorf("%s: clocks started %v last %v updated %v created %v; want now (%v) and the key's first creation",
			what, e.SessionStartedAt, e.LastInteractionAt, e.UpdatedAt, e.CreatedAt, now)
	}
	if e.Title != "new day" {
		f.t.Errorf("%s: title %q, want the new first message's", what, e.Title)
	}
	a := f.archived(k)
	if len(a) == 0 || a[0].SessionID != old.SessionID || a[0].Reason != reason || a[0].Deleted || !a[0].ArchivedAt.Equal(now) {
		f.t.Errorf("%s: Archived = %+v, want %s first, reason %q, archived now", what, a, old.SessionID, reason)
	}
	f.same(what, e)
	return e
}

func testResetIdle(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error {
		e.Label, e.ModelOverride, e.QueueMode = "ops", "big", "steer"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 5, TotalTokens: 5, Messages: 1, ContextTokens: 50})
	f.flush()
	// Exactly idleMinutes later the session is still fresh (stale means
	// more than idleMinutes), and that message moves the idle clock.
	f.clk.Advance(10 * time.Minute)
	last := f.clk.Now()
	f.wantKept("at the idle limit", k, e0.SessionID)
	f.clk.Advance(10*time.Minute + time.Second)
	e := f.wantRollover("idle", k, e0, sessions.ReasonIdle, last.Add(10*time.Minute))
	// A timed rollover clears counters and overrides, keeps label and
	// where replies go.
	if e.MessageCount != 0 || e.TotalTokens != 0 || e.InputTokens != 0 || e.ContextTokens != 0 || e.CompactionCount != 0 {
		t.Errorf("counters after rollover: %+v, want zero", e)
	}
	if e.ModelOverride != "" || e.QueueMode != "" {
		t.Errorf("timed rollover kept overrides model %q queue %q", e.ModelOverride, e.QueueMode)
	}
	if e.Label != "ops" || e.DisplayName != "Ann" || e.LastTo != "-100" || e.Channel != "telegram" {
		t.Errorf("rollover lost label/display name/route: %+v", e)
	}
	a := f.archived(k)
	if a[0].MessageCount != 1 || a[0].TotalTokens != 5 || a[0].Title != "hello" {
		t.Errorf("archived record %+v, want the old session's title and counters", a[0])
	}
	if _, ok, err := f.idx.GetByID(e0.SessionID); err != nil || ok {
		t.Errorf("GetByID of the rolled-over session = %v, %v; want not current", ok, err)
	}
}

func testResetDaily(t *testing.T, open Opener) {
	f := newFixture(t, open, daily(4, "UTC"))
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	// Messages all evening and night keep nothing fresh past 04:00.
	f.clk.Set(time.Date(2026, 3, 11, 3, 59, 59, 0, time.UTC))
	f.wantKept("before 04:00", k, e0.SessionID)
	boundary := time.Date(2026, 3, 11, 4, 0, 0, 0, time.UTC)
	f.clk.Set(boundary)
	e1 := f.wantRollover("at 04:00", k, e0, sessions.ReasonDaily, boundary)
	f.clk.Set(time.Date(2026, 3, 12, 3, 0, 0, 0, time.UTC))
	f.wantKept("next night", k, e1.SessionID)
	// Days without messages: the session expired at the first 04:00.
	f.clk.Set(time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC))
	f.wantRollover("days later", k, f.get(k), sessions.ReasonDaily, time.Date(2026, 3, 12, 4, 0, 0, 0, time.UTC))
}

func testResetDailyZone(t *testing.T, open Opener) {
	// 04:00 in Tokyo (UTC+9) is 19:00 UTC; t0 is 21:00 there.
	f := newFixture(t, open, daily(4, "Asia/Tokyo"))
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	f.clk.Set(time.Date(2026, 3, 10, 18, 59, 0, 0, time.UTC))
	f.wantKept("before 04:00 JST", k, e0.SessionID)
	f.clk.Set(time.Date(2026, 3, 10, 19, 0, 1, 0, time.UTC))
	f.wantRollover("after 04:00 JST", k, e0, sessions.ReasonDaily, time.Date(2026, 3, 10, 19, 0, 0, 0, time.UTC))
}

func testResetByType(t *testing.T, open Opener) {
	// Groups reset after 5 idle minutes; direct chats follow the global
	// policy, which is off.
	n := 5
	f := newFixture(t, open, sessions.ResetConfig{ResetByType: map[string]sessions.ResetPolicy{
		"group": {Mode: sessions.ResetIdle, IdleMinutes: &n}}})
	g, d := f.key("g1"), f.keyOf(routing.Direct, "u1")
	eg, _ := f.begin(g, origin("group"))
	ed, _ := f.begin(d, origin("dm"))
	f.clk.Advance(6 * time.Minute)
	f.wantRollover("group", g, eg, sessions.ReasonIdle, t0.Add(5*time.Minute))
	f.wantKept("direct", d, ed.SessionID)
}

func testResetOff(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	f.clk.Advance(20 * 24 * time.Hour)
	f.wantKept("20 days later", k, e0.SessionID)
}

func testResetInternal(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	e0, _ := f.begin(k, origin("hello"))
	// Internal work and counters are not input: they keep nothing fresh.
	f.clk.Advance(8 * time.Minute)
	if e, info := f.begin(k, sessions.Origin{Internal: true}); e.SessionID != e0.SessionID || info.ResetReason != "" {
		t.Fatalf("internal Begin rolled the session over: %+v", info)
	}
	f.idx.AddCounters(k, sessions.Counters{Messages: 1})
	f.flush()
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.Label = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(3 * time.Minute)
	f.wantRollover("idle despite internal work", k, e0, sessions.ReasonIdle, t0.Add(10*time.Minute))
}

func testManualReset(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	// A key without a session gets one.
	e0, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true, Model: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if e0.ModelOverride != "small" || len(f.archived(k)) != 0 {
		t.Errorf("Reset of a new key: model %q archived %v", e0.ModelOverride, ids(f.archived(k)))
	}
	f.same("Reset new", e0)
	f.begin(k, origin("hello"))
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error {
		e.Label, e.QueueMode, e.QueueCap, e.CompactionCount = "ops", "steer", 3, 2
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.idx.AddCounters(k, sessions.Counters{Messages: 4, TotalTokens: 40})
	f.flush()
	f.clk.Advance(time.Minute)
	// /new keeps model and queue overrides, clears counters and title.
	e1, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	if e1.SessionID == e0.SessionID || e1.ModelOverride != "small" || e1.QueueMode != "steer" || e1.QueueCap != 3 || e1.Label != "ops" {
		t.Errorf("manual reset: %+v, want a new id keeping overrides and label", e1)
	}
	if e1.MessageCount != 0 || e1.TotalTokens != 0 || e1.CompactionCount != 0 || e1.Title != "" || !e1.SessionStartedAt.Equal(f.clk.Now()) {
		t.Errorf("manual reset kept counters, compactions or title: %+v", e1)
	}
	f.same("Reset", e1)
	// /new <model> sets the model; a reset that is not manual drops the
	// overrides; the reason given is recorded.
	e2, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true, Model: "large", Reason: "/new"})
	if err != nil || e2.ModelOverride != "large" {
		t.Fatalf("Reset with a model: %q, %v", e2.ModelOverride, err)
	}
	e3, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{})
	if err != nil || e3.ModelOverride != "" || e3.QueueMode != "" || e3.Label != "ops" {
		t.Fatalf("Reset, not manual: %+v, %v", e3, err)
	}
	a := f.archived(k)
	if got, want := ids(a), []string{e2.SessionID, e1.SessionID, e0.SessionID}; !slices.Equal(got, want) {
		t.Fatalf("Archived = %v, want %v (newest first)", got, want)
	}
	var reasons []string
	for _, r := range a {
		reasons = append(reasons, r.Reason)
	}
	if want := []string{"reset", "/new", "manual"}; !slices.Equal(reasons, want) {
		t.Errorf("archive reasons %q, want %q", reasons, want)
	}
	if a[2].MessageCount != 4 || a[2].TotalTokens != 40 || a[2].Title != "hello" {
		t.Errorf("archived record %+v, want the old title and counters", a[2])
	}
}

func testArchivedCap(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k := f.key("g1")
	var replaced []string
	cur, _ := f.begin(k, origin("hello"))
	for range sessions.MaxArchivedPerKey + 5 {
		f.clk.Advance(time.Second)
		next, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
		if err != nil {
			t.Fatal(err)
		}
		replaced = append([]string{cur.SessionID}, replaced...)
		cur = next
	}
	if got, want := ids(f.archived(k)), replaced[:sessions.MaxArchivedPerKey]; !slices.Equal(got, want) {
		t.Errorf("Archived after %d resets:\n got %v\nwant the newest %d, newest first: %v", len(replaced), got, len(want), want)
	}
	// What Archived no longer lists cannot be switched to; what it lists can.
	_, err := f.idx.Switch(f.ctx, k, replaced[len(replaced)-1])
	wantNotFound(t, "Switch to a session past the archive cap", err)
	oldest := replaced[sessions.MaxArchivedPerKey-1]
	if e, err := f.idx.Switch(f.ctx, k, oldest); err != nil || e.SessionID != oldest {
		t.Errorf("Switch to the oldest listed session = %s, %v; want %s", e.SessionID, err, oldest)
	}
}
