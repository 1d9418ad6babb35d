package pgstore

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

func TestBeginCreatesThenTouches(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	x := db.Index("main", nil)
	key := mustKey(t, "main", "telegram", "-100123")

	e, info, err := x.Begin(ctx, key, sessions.Origin{Channel: "telegram", ChatType: "group", To: "-100123",
		From: "42", Name: "Ann", Title: "  hello   there, a long first message text"})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Created || e.SessionID == "" || e.SessionKey != key.String() {
		t.Fatalf("first Begin: info %+v entry %+v", info, e)
	}
	want := sessions.Entry{SessionKey: key.String(), SessionID: e.SessionID, CreatedAt: clk.t, SessionStartedAt: clk.t,
		LastInteractionAt: clk.t, UpdatedAt: clk.t, Title: sessions.MakeTitle("hello there, a long first message text"),
		Channel: "telegram", ChatType: "group", LastChannel: "telegram", LastTo: "-100123", LastFrom: "42", DisplayName: "Ann"}
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("created entry (-want +got):\n%s", d)
	}
	got, ok, err := x.Get(ctx, key)
	if err != nil || !ok {
		t.Fatalf("Get: %v %v", ok, err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Errorf("Get after Begin (-begin +get):\n%s", d)
	}

	clk.t = clk.t.Add(time.Minute)
	e2, info, err := x.Begin(ctx, key, sessions.Origin{Channel: "telegram", From: "43", Title: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Created || info.ResetReason != "" || e2.SessionID != e.SessionID {
		t.Fatalf("second Begin made a new session: %+v %+v", info, e2)
	}
	if !e2.LastInteractionAt.Equal(clk.t) || !e2.UpdatedAt.Equal(clk.t) || e2.LastFrom != "43" || e2.Title != want.Title ||
		e2.DisplayName != "Ann" {
		t.Errorf("touch: %+v", e2)
	}

	// Internal work (a subagent's announcement) does not move the idle clock.
	clk.t = clk.t.Add(time.Minute)
	e3, _, err := x.Begin(ctx, key, sessions.Origin{Internal: true})
	if err != nil {
		t.Fatal(err)
	}
	if !e3.LastInteractionAt.Equal(e2.LastInteractionAt) || !e3.UpdatedAt.Equal(clk.t) {
		t.Errorf("internal Begin: lastInteraction %v (want %v), updated %v", e3.LastInteractionAt, e2.LastInteractionAt, e3.UpdatedAt)
	}

	byID, ok, err := x.GetByID(ctx, e.SessionID)
	if err != nil || !ok || byID.SessionKey != key.String() {
		t.Fatalf("GetByID: %+v %v %v", byID, ok, err)
	}
	if _, ok, err := db.Index("other", nil).GetByID(ctx, e.SessionID); ok || err != nil {
		t.Errorf("GetByID of another agent found %v (%v)", ok, err)
	}
	if _, _, err := x.Get(ctx, mustKey(t, "other", "telegram", "1")); err == nil {
		t.Error("Get accepted a key of another agent")
	}
}

func TestBeginRollsOverStaleSession(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	x := db.Index("main", idle)
	key := mustKey(t, "main", "discord", "777")

	first, _, err := x.Begin(ctx, key, sessions.Origin{Channel: "discord", Name: "Bo", Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Patch(ctx, key, func(e *sessions.Entry) error { e.Label, e.ModelOverride = "ops", "gpt-x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := x.AddCounters(ctx, key, sessions.Counters{Messages: 4, TotalTokens: 900}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(11 * time.Minute)
	e, info, err := x.Begin(ctx, key, sessions.Origin{Channel: "discord", Title: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if info.ResetReason != sessions.ReasonIdle || info.Previous != first.SessionID || e.SessionID == first.SessionID {
		t.Fatalf("stale Begin: info %+v, id %s (old %s)", info, e.SessionID, first.SessionID)
	}
	if e.MessageCount != 0 || e.TotalTokens != 0 || e.Label != "ops" || e.ModelOverride != "" || e.DisplayName != "Bo" ||
		e.Title != "second" || !e.SessionStartedAt.Equal(clk.t) || !e.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("rolled-over entry: %+v", e)
	}
	arch, err := x.Archived(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(arch) != 1 || arch[0].SessionID != first.SessionID || arch[0].Reason != sessions.ReasonIdle ||
		arch[0].MessageCount != 4 || arch[0].TotalTokens != 900 || arch[0].Title != "first" {
		t.Errorf("archive: %+v", arch)
	}
}

func TestResetPatchDeleteSwitch(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	key := mustKey(t, "main", "telegram", "5")

	// Reset of an unknown key creates it, with the requested model.
	e0, err := x.Reset(ctx, key, sessions.ResetOptions{Manual: true, Model: "m1"})
	if err != nil || e0.ModelOverride != "m1" {
		t.Fatalf("reset of a new key: %+v %v", e0, err)
	}
	if _, err := x.Patch(ctx, key, func(e *sessions.Entry) error {
		e.QueueMode, e.Label, e.SessionID = "collect", "L", "hijack"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p, _, _ := x.Get(ctx, key)
	if p.SessionID != e0.SessionID || p.QueueMode != "collect" || p.Label != "L" {
		t.Fatalf("patch: %+v", p)
	}
	boom := errors.New("boom")
	if _, err := x.Patch(ctx, key, func(e *sessions.Entry) error { e.Label = "lost"; return boom }); !errors.Is(err, boom) {
		t.Fatalf("patch returning an error: %v", err)
	}
	if p2, _, _ := x.Get(ctx, key); p2.Label != "L" {
		t.Errorf("a failed patch was written: %+v", p2)
	}

	manual, err := x.Reset(ctx, key, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	if manual.SessionID == e0.SessionID || manual.ModelOverride != "m1" || manual.QueueMode != "collect" || manual.Label != "L" {
		t.Errorf("manual reset keeps overrides and label: %+v", manual)
	}
	timed, err := x.Reset(ctx, key, sessions.ResetOptions{Reason: sessions.ReasonDaily})
	if err != nil {
		t.Fatal(err)
	}
	if timed.ModelOverride != "" || timed.QueueMode != "" || timed.Label != "L" {
		t.Errorf("timed reset drops overrides, keeps label: %+v", timed)
	}
	arch, _ := x.Archived(ctx, key)
	var reasons []string
	for _, a := range arch {
		reasons = append(reasons, a.Reason)
	}
	if d := cmp.Diff([]string{"daily", "manual"}, reasons); d != "" {
		t.Errorf("archive reasons, newest first (-want +got):\n%s", d)
	}

	sw, err := x.Switch(ctx, key, e0.SessionID)
	if err != nil || sw.SessionID != e0.SessionID {
		t.Fatalf("switch back: %+v %v", sw, err)
	}
	if _, err := x.Switch(ctx, key, "no-such-id"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("switch to an unknown id: %v", err)
	}

	if err := x.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := x.Get(ctx, key); ok {
		t.Error("entry still there after Delete")
	}
	if err := x.Delete(ctx, key); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := x.Patch(ctx, key, func(*sessions.Entry) error { return nil }); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Patch of a deleted key: %v", err)
	}
	if err := x.AddCounters(ctx, key, sessions.Counters{Messages: 1}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("AddCounters of a deleted key: %v", err)
	}
	arch, _ = x.Archived(ctx, key)
	if len(arch) == 0 || arch[0].Reason != "deleted" || !arch[0].Deleted || arch[0].SessionID != e0.SessionID {
		t.Errorf("archive after delete: %+v", arch)
	}
	// A deleted session comes back with Switch; it leaves the archive.
	back, err := x.Switch(ctx, key, e0.SessionID)
	if err != nil || back.SessionID != e0.SessionID || back.Title != e0.Title {
		t.Fatalf("switch to a deleted session: %+v %v", back, err)
	}
	if got, ok, _ := x.Get(ctx, key); !ok || got.SessionID != e0.SessionID {
		t.Errorf("Get after restoring: %+v %v", got, ok)
	}
	after, _ := x.Archived(ctx, key)
	if len(after) != len(arch)-1 {
		t.Errorf("archive holds %d sessions after restoring one of %d", len(after), len(arch))
	}
	for _, a := range after {
		if a.SessionID == e0.SessionID {
			t.Errorf("restored session still archived: %+v", a)
		}
	}
}

func TestListRecentCounters(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	x := db.Index("main", nil)
	var want []string
	for _, peer := range []string{"a", "b", "c", "d"} {
		clk.t = clk.t.Add(time.Second)
		k := mustKey(t, "main", "telegram", peer)
		if _, _, err := x.Begin(ctx, k, sessions.Origin{}); err != nil {
			t.Fatal(err)
		}
		want = append([]string{k.String()}, want...)
	}
	// Another agent's sessions are not listed.
	if _, _, err := db.Index("other", nil).Begin(ctx, mustKey(t, "other", "telegram", "z"), sessions.Origin{}); err != nil {
		t.Fatal(err)
	}
	// Counters move updatedAt: "a" becomes the most recent.
	clk.t = clk.t.Add(time.Second)
	a := mustKey(t, "main", "telegram", "a")
	if err := x.AddCounters(ctx, a, sessions.Counters{InputTokens: 3, OutputTokens: 4, TotalTokens: 7, Messages: 2,
		ContextTokens: 500, Model: "m", Provider: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := x.AddCounters(ctx, a, sessions.Counters{InputTokens: 1, Messages: 1}); err != nil {
		t.Fatal(err)
	}
	want = append([]string{a.String()}, want[:3]...)
	keys := func(es []sessions.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.SessionKey)
		}
		return out
	}
	all, err := x.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, keys(all)); d != "" {
		t.Errorf("List order (-want +got):\n%s", d)
	}
	recent, err := x.Recent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[:2], keys(recent)); d != "" {
		t.Errorf("Recent(2) (-want +got):\n%s", d)
	}
	e := all[0]
	if e.InputTokens != 4 || e.OutputTokens != 4 || e.TotalTokens != 7 || e.MessageCount != 3 || e.ContextTokens != 500 ||
		e.Model != "m" || e.Provider != "p" || !e.LastInteractionAt.Before(e.UpdatedAt) {
		t.Errorf("counters: %+v", e)
	}
}

func TestHostileKeysAreParameters(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	x := db.Index("main", nil)
	peers := []string{
		`'; DROP TABLE entries; --`,
		`"quoted" \' $1 %s`,
		"ünïcødé-群组-😀",
		strings.Repeat("x", 256), // routing's longest peer id
		strings.Repeat("é", 128),
		"tab\tnewline\nend",
	}
	for _, p := range peers {
		k := mustKey(t, "main", "telegram", p)
		e, _, err := x.Begin(ctx, k, sessions.Origin{Title: p, Name: p, From: p})
		if err != nil {
			t.Fatalf("Begin %.40q: %v", p, err)
		}
		got, ok, err := x.Get(ctx, k)
		if err != nil || !ok || got.SessionKey != k.String() || got.DisplayName != p || got.SessionID != e.SessionID {
			t.Errorf("round trip of %.40q: ok=%v err=%v key=%.60q", p, ok, err, got.SessionKey)
		}
	}
	all, err := x.List(ctx)
	if err != nil || len(all) != len(peers) {
		t.Fatalf("List after hostile keys: %d entries, %v", len(all), err)
	}
	for _, id := range []string{`' OR '1'='1`, strings.Repeat("ÿ", 100_000)} {
		if _, ok, err := x.GetByID(ctx, id); ok || err != nil {
			t.Errorf("GetByID(%.20q): ok=%v err=%v", id, ok, err)
		}
	}
}

// Ties on updatedAt are ordered by key bytes, as the files backend's List
// (Go string comparison) does, whatever the server's locale.
func TestListTiesInByteOrder(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	db.now = func() time.Time { return at }
	x := db.Index("main", nil)
	var want []string
	for _, p := range []string{"apple", "Zed", "_x", "éa", "Ab"} {
		k := mustKey(t, "main", "telegram", p)
		if _, _, err := x.Begin(ctx, k, sessions.Origin{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, k.String())
	}
	slices.Sort(want)
	all, err := x.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.SessionKey)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("List order of ties (-want +got):\n%s", d)
	}
}
