package openai

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestThinkingLevelSetsReasoningEffort: a session's /think level is sent
// as reasoning_effort; off and no level send none.
func TestThinkingLevelSetsReasoningEffort(t *testing.T) {
	srv := openaitest.NewServer(t)
	p := newProvider(t, srv, 0)
	if !llm.Thinks(p) {
		t.Fatal("the openai provider does not report a thinking setting")
	}
	levels := []string{sessions.ThinkingLow, sessions.ThinkingHigh, sessions.ThinkingOff, ""}
	for _, level := range levels {
		if _, err := p.Stream(context.Background(), llm.Request{Model: "o4-mini", Messages: []sessions.Message{user("hi")}, Thinking: level}, nil); err != nil {
			t.Fatalf("%q: %v", level, err)
		}
	}
	want := []string{"low", "high", "", ""}
	for i, r := range srv.Requests() {
		if r.Body.ReasoningEffort != want[i] {
			t.Errorf("level %q: reasoning_effort %q, want %q", levels[i], r.Body.ReasoningEffort, want[i])
		}
	}
}

// TestReasoningEffortRefusedByModel: a model that refuses reasoning_effort
// (a 400 naming the parameter, as OpenAI answers for gpt-4o) gets the
// request again without it, and later requests to that model leave it out
// from the start, while another model of the provider still gets it: a
// session's /think level carried across /model does not fail its turns.
func TestReasoningEffortRefusedByModel(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if r.Body.Model == "gpt-4o" && r.Body.ReasoningEffort != "" {
			return openaitest.Reply{Status: 400, ErrorCode: "unsupported_parameter",
				ErrorMessage: "Unsupported parameter: 'reasoning_effort' is not supported with this model."}
		}
		return openaitest.Reply{Text: "ok"}
	})
	p := newProvider(t, srv, 0)
	ask := func(model string) {
		t.Helper()
		m, err := p.Stream(context.Background(), llm.Request{Model: model, Messages: []sessions.Message{user("hi")}, Thinking: sessions.ThinkingHigh}, nil)
		if err != nil || m.Text() != "ok" {
			t.Fatalf("%s: %q, %v; want the answer", model, m.Text(), err)
		}
	}
	ask("gpt-4o")
	ask("gpt-4o")
	ask("o4-mini")
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.Body.Model+":"+r.Body.ReasoningEffort)
	}
	want := []string{"gpt-4o:high", "gpt-4o:", "gpt-4o:", "o4-mini:high"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// TestOtherBadRequestNotRetriedWithoutEffort: a 400 about something else
// is the turn's error, asked once.
func TestOtherBadRequestNotRetriedWithoutEffort(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(int, openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: 400, ErrorMessage: "Invalid 'messages[0].content': string too long."}
	})
	p := newProvider(t, srv, 0)
	if _, err := p.Stream(context.Background(), llm.Request{Model: "o4-mini", Messages: []sessions.Message{user("hi")}, Thinking: sessions.ThinkingLow}, nil); err == nil {
		t.Fatal("a refused request answered no error")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestReasoningEffortRefusedAsUnprocessable: an OpenAI-compatible endpoint
// that validates its body strictly answers 422 to the unknown
// reasoning_effort field (Mistral's "extra_forbidden"): the request is
// sent again without it, as for a 400, instead of failing every turn of a
// session whose /think level was set for another model.
func TestReasoningEffortRefusedAsUnprocessable(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if r.Body.ReasoningEffort != "" {
			return openaitest.Reply{Status: 422, ErrorMessage: "body.reasoning_effort: Extra inputs are not permitted"}
		}
		return openaitest.Reply{Text: "ok"}
	})
	p := newProvider(t, srv, 0)
	m, err := p.Stream(context.Background(), llm.Request{Model: "mistral-large", Messages: []sessions.Message{user("hi")}, Thinking: sessions.ThinkingHigh}, nil)
	if err != nil || m.Text() != "ok" {
		t.Fatalf("%q, %v; want the answer without reasoning_effort", m.Text(), err)
	}
}
