package agents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestSpawnTakesThinkingAndReportsModel (seed 002, issue 27):
// sessions_spawn takes thinking (stored on the child and sent with its
// model calls) and answers modelApplied; a model the config does not offer
// (no provider, or a provider's model nobody listed or priced: a spawn
// must not reach a model the budgets cannot price) does not fail the
// spawn: the child runs on its agent's model and the answer says so in
// warning, with the choices. A thinking level that is not one is an error.
func TestSpawnTakesThinkingAndReportsModel(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
	h.r.windows = ContextWindows{"fake/model-2": 200000}
	s, err := h.r.open("main", h.key("main", "7"))
	if err != nil {
		t.Fatal(err)
	}
	spawn := func(args string) SpawnResult {
		t.Helper()
		sr, err := h.r.spawn(context.Background(), s, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return sr
	}
	child := func(sr SpawnResult) sessions.Entry {
		t.Helper()
		l, err := h.stores["main"].List()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l {
			if e.SessionKey == sr.ChildSessionKey {
				return e
			}
		}
		t.Fatalf("no child %s", sr.ChildSessionKey)
		return sessions.Entry{}
	}

	ok := spawn(`{"task":"think hard","model":"fake/model-2","thinking":"high"}`)
	if ok.Status != SpawnAccepted || !ok.ModelApplied || ok.Warning != "" {
		t.Errorf("configured model: %+v, want accepted, modelApplied, no warning", ok)
	}
	if e := child(ok); e.ModelOverride != "fake/model-2" || e.ThinkingLevel != sessions.ThinkingHigh {
		t.Errorf("child entry model %q thinking %q, want fake/model-2, high", e.ModelOverride, e.ThinkingLevel)
	}
	h.drain(0)
	var sawHigh bool
	for _, req := range h.p.requests() {
		sawHigh = sawHigh || (strings.Contains(req.System, "You are a subagent") && req.Thinking == sessions.ThinkingHigh)
	}
	if !sawHigh {
		t.Error("the child's model call did not carry thinking high")
	}

	for _, m := range []string{"nope/m", "fake/o1-pro-unlisted"} {
		warn := spawn(`{"task":"x","model":"` + m + `"}`)
		if warn.Status != SpawnAccepted || warn.ModelApplied || !strings.Contains(warn.Warning, `"`+m+`" is not offered`) ||
			!strings.Contains(warn.Warning, "fake/model-2") {
			t.Errorf("model %s: %+v, want accepted, not applied, a warning naming it and the choices", m, warn)
		}
		if e := child(warn); e.ModelOverride != "" {
			t.Errorf("child of model %s has override %q, want none", m, e.ModelOverride)
		}
	}
	if e := child(spawn(`{"task":"x","model":"FAKE/Model-2"}`)); e.ModelOverride != "fake/model-2" {
		t.Errorf("a listed model in another case: child override %q, want fake/model-2 as configured", e.ModelOverride)
	}
	if plain := spawn(`{"task":"x"}`); plain.Status != SpawnAccepted || plain.ModelApplied || plain.Warning != "" {
		t.Errorf("no model: %+v, want accepted, modelApplied false, no warning", plain)
	}
	if bad := spawn(`{"task":"x","thinking":"max"}`); bad.Status != SpawnError || !strings.Contains(bad.Error, "thinking") {
		t.Errorf("bad thinking: %+v, want an error naming it", bad)
	}
}
