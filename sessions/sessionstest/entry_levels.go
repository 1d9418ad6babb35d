package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// testEntryLevels: seed 002's entry fields verboseLevel, reasoningLevel,
// sendPolicy and responseUsage (issue 27) are stored, read back by another
// handle as another process would, survive a touch and a counter flush,
// and describe the session's chat, so a reset of either kind keeps them;
// clearing them is stored too.
func testEntryLevels(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	f.begin(k, origin("hello"))
	want := func(e sessions.Entry) [4]string {
		return [4]string{e.VerboseLevel, e.ReasoningLevel, e.SendPolicy, e.ResponseUsage}
	}
	set := [4]string{"on", "stream", sessions.SendDeny, "tokens"}
	got, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error {
		e.VerboseLevel, e.ReasoningLevel, e.SendPolicy, e.ResponseUsage = set[0], set[1], set[2], set[3]
		return nil
	})
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	check := func(what string, e sessions.Entry, w [4]string) {
		t.Helper()
		if g := want(e); g != w {
			t.Errorf("%s: verbose, reasoning, send policy, usage = %q, want %q", what, g, w)
		}
	}
	check("after Patch", got, set)
	if got.Sends() {
		t.Error("Sends() with send policy deny = true")
	}
	f.clk.Advance(time.Minute)
	f.begin(k, origin("again"))
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 3, TotalTokens: 3, Messages: 1})
	f.flush()
	check("another handle, after a touch and counters", get(t, f.reopen(), k), set)

	e, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatalf("manual Reset: %v", err)
	}
	check("manual reset", e, set)
	f.clk.Advance(11 * time.Minute)
	e, _ = f.begin(k, origin("later"))
	check("timed rollover", e, set)
	f.same("timed rollover", e)

	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error {
		e.VerboseLevel, e.ReasoningLevel, e.SendPolicy, e.ResponseUsage = "", "", "", ""
		return nil
	}); err != nil {
		t.Fatalf("Patch clearing: %v", err)
	}
	cleared := get(t, f.reopen(), k)
	check("cleared, another handle", cleared, [4]string{})
	if !cleared.Sends() {
		t.Error("Sends() with no send policy = false")
	}
}
