package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// testChatSettings: the settings a chat sets on its session (/model,
// /think, /activation; the provider override of an imported entry) are
// stored, read back by another handle as another process would, survive
// a touch and a counter flush, follow a manual reset (the model and
// thinking level like the other overrides), and a timed rollover keeps
// only the group activation, which describes the room.
func testChatSettings(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	f.begin(k, origin("hello"))
	set := func(e *sessions.Entry) error {
		e.ModelOverride, e.ProviderOverride = "gpt-4o", "openai"
		e.ThinkingLevel, e.GroupActivation = sessions.ThinkingHigh, sessions.ActivationAlways
		return nil
	}
	got, err := f.idx.Patch(f.ctx, k, set)
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	f.same("Patch", got)
	check := func(what string, e sessions.Entry, model, provider, thinking, activation string) {
		t.Helper()
		if e.ModelOverride != model || e.ProviderOverride != provider || e.ThinkingLevel != thinking || e.GroupActivation != activation {
			t.Errorf("%s: model %q provider %q thinking %q activation %q; want %q %q %q %q", what,
				e.ModelOverride, e.ProviderOverride, e.ThinkingLevel, e.GroupActivation, model, provider, thinking, activation)
		}
	}
	check("after Patch", got, "gpt-4o", "openai", "high", "always")
	if m := got.ModelFor(); m != "openai/gpt-4o" {
		t.Errorf("ModelFor = %q, want openai/gpt-4o", m)
	}

	f.clk.Advance(time.Minute)
	f.begin(k, origin("again"))
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 3, TotalTokens: 3, Messages: 1})
	f.flush()
	check("another handle, after a touch and counters", get(t, f.reopen(), k), "gpt-4o", "openai", "high", "always")

	e, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatalf("manual Reset: %v", err)
	}
	check("manual reset", e, "gpt-4o", "openai", "high", "always")
	f.same("manual reset", e)
	e, err = f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true, Model: "local/echo"})
	if err != nil {
		t.Fatalf("manual Reset with a model: %v", err)
	}
	check("manual reset with a model", e, "local/echo", "", "high", "always")

	f.clk.Advance(11 * time.Minute)
	e, _ = f.begin(k, origin("later"))
	check("timed rollover", e, "", "", "", "always")
	f.same("timed rollover", e)

	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.GroupActivation = ""; return nil }); err != nil {
		t.Fatalf("Patch clearing: %v", err)
	}
	check("cleared, another handle", get(t, f.reopen(), k), "", "", "", "")
}

// get reads k from idx and fails the test when there is none.
func get(t *testing.T, idx sessions.Index, k routing.Key) sessions.Entry {
	t.Helper()
	e, ok, err := idx.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get(%s) = %v, %v; want the entry", k, ok, err)
	}
	return e
}
