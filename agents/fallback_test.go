package agents

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// fallbackRig is a runner whose model chain is primary/gpt-a then
// backup/gpt-b, two OpenAI-compatible fakes, with one retry each.
type fallbackRig struct {
	h        *harness
	primary  *openaitest.Server
	backup   *openaitest.Server
	clock    *fakeClock
	registry *prometheus.Registry
}

func newFallbackRig(t *testing.T, agent Agent) *fallbackRig {
	t.Helper()
	rig := &fallbackRig{primary: openaitest.NewServer(t), backup: openaitest.NewServer(t),
		clock: &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, registry: prometheus.NewRegistry()}
	provider := func(name string, srv *openaitest.Server) llm.Provider {
		cfg := srv.ProviderConfig()
		cfg.MaxRetries = llm.Retry(1) // the provider's own retry budget, spent before a fallback
		p, err := openai.New(openai.Config{Name: name, Provider: cfg, RetryBaseDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := Defaults{Model: Model{Primary: "primary/gpt-a", Fallbacks: []string{"backup/gpt-b"}}}
	rig.h = newHarnessWith(t, d, []Agent{agent}, nil,
		map[string]llm.Provider{"primary": provider("primary", rig.primary), "backup": provider("backup", rig.backup)})
	rig.h.r.breaker = NewBreaker(3, time.Minute, rig.clock.now)
	c, err := newFallbackCounter(rig.registry)
	if err != nil {
		t.Fatal(err)
	}
	rig.h.r.fallbacks = c
	return rig
}

func (rig *fallbackRig) run(t *testing.T, text string) (Result, error) {
	t.Helper()
	k := rig.h.key("main", "1")
	return rig.h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(text)}})
}

func (rig *fallbackRig) fallbacks(from, to string) float64 {
	return testutil.ToFloat64(rig.h.r.fallbacks.WithLabelValues(from, to))
}

func TestFallbackAnswersWhenThePrimaryFails(t *testing.T) {
	for name, status := range map[string]int{"500": 500, "503": 503, "429 quota": 429} {
		t.Run(name, func(t *testing.T) {
			rig := newFallbackRig(t, Agent{ID: "main"})
			rig.primary.SetReply(func(int, openaitest.Request) openaitest.Reply {
				return openaitest.Reply{Status: status, RetryAfter: "0"}
			})
			res, err := rig.run(t, "hello")
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "reply: hello" || res.Model != "backup/gpt-b" {
				t.Fatalf("result = %+v, want the backup's answer", res)
			}
			if n := len(rig.primary.Requests()); n != 2 {
				t.Fatalf("primary saw %d requests, want 2 (its retry budget spent first)", n)
			}
			if reqs := rig.backup.Requests(); len(reqs) != 1 || reqs[0].Body.Model != "gpt-b" {
				t.Fatalf("backup requests = %+v", reqs)
			}
			hist, _ := rig.h.transcript("main", rig.h.key("main", "1")).History(context.Background())
			if last := hist[len(hist)-1]; last.Provider != "backup" || last.Model != "gpt-b" {
				t.Fatalf("transcript names %s/%s, want backup/gpt-b", last.Provider, last.Model)
			}
			e, _, _ := rig.h.stores["main"].Get(rig.h.key("main", "1"))
			if e.Provider != "backup" || e.Model != "gpt-b" {
				t.Fatalf("entry counters name %s/%s, want backup/gpt-b", e.Provider, e.Model)
			}
			if got := rig.fallbacks("primary/gpt-a", "backup/gpt-b"); got != 1 {
				t.Fatalf("gateway_model_fallbacks_total{primary/gpt-a→backup/gpt-b} = %v, want 1", got)
			}
		})
	}
}

func TestFallbackBreakerSkipsADeadProviderThenTriesItAgain(t *testing.T) {
	rig := newFallbackRig(t, Agent{ID: "main"})
	down := true
	rig.primary.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if down {
			return openaitest.Reply{Status: 503, RetryAfter: "0"}
		}
		return openaitest.Reply{Text: "primary back: " + r.LastUserText()}
	})
	for i := range 3 {
		if res, err := rig.run(t, "x"); err != nil || res.Model != "backup/gpt-b" {
			t.Fatalf("turn %d: %+v, %v", i+1, res, err)
		}
	}
	if !rig.h.r.breaker.Open("primary") {
		t.Fatal("breaker still closed after 3 failed turns")
	}
	seen := len(rig.primary.Requests())
	if res, err := rig.run(t, "y"); err != nil || res.Model != "backup/gpt-b" {
		t.Fatalf("turn with the breaker open: %+v, %v", res, err)
	}
	if n := len(rig.primary.Requests()); n != seen {
		t.Fatalf("open breaker: the primary got %d more requests", n-seen)
	}
	if got := rig.fallbacks("primary/gpt-a", "backup/gpt-b"); got != 4 {
		t.Fatalf("fallbacks counted %v, want 4", got)
	}

	down = false
	rig.clock.advance(time.Minute)
	res, err := rig.run(t, "z")
	if err != nil || res.Model != "primary/gpt-a" || res.Text != "primary back: z" {
		t.Fatalf("after the cool-down: %+v, %v; want the primary's trial to answer", res, err)
	}
	if rig.h.r.breaker.Open("primary") {
		t.Fatal("successful trial left the breaker open")
	}
}

func TestFallbackNotForTheRequestsFault(t *testing.T) {
	for name, rep := range map[string]openaitest.Reply{
		"400 bad request": {Status: 400, ErrorMessage: "invalid tool schema"},
		"context overflow": {Status: 400, ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 8192 tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			rig := newFallbackRig(t, Agent{ID: "main"})
			rig.primary.SetReply(func(int, openaitest.Request) openaitest.Reply { return rep })
			_, err := rig.run(t, "hello")
			if err == nil {
				t.Fatal("turn succeeded; want the primary's error")
			}
			var ue *UserError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v: want a UserError", err)
			}
			if n := len(rig.backup.Requests()); n != 0 {
				t.Fatalf("backup got %d requests for a request's fault", n)
			}
			if rig.h.r.breaker.Open("primary") {
				t.Fatal("a request's fault counted against the provider")
			}
		})
	}
}

func TestFallbackAllFailing(t *testing.T) {
	rig := newFallbackRig(t, Agent{ID: "main"})
	fail := func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 502, RetryAfter: "0"} }
	rig.primary.SetReply(fail)
	rig.backup.SetReply(fail)
	for i := range 4 {
		_, err := rig.run(t, "x")
		if err == nil || UserMessage(err) != "The model could not answer right now. Please try again in a moment." {
			t.Fatalf("turn %d: error %v", i+1, err)
		}
	}
	// Both breakers open: the primary is still called as a last resort.
	seen := len(rig.primary.Requests())
	if _, err := rig.run(t, "x"); err == nil {
		t.Fatal("want an error")
	}
	if n := len(rig.primary.Requests()); n <= seen {
		t.Fatal("with every breaker open, the primary was not called as a last resort")
	}
	if got := rig.fallbacks("primary/gpt-a", "backup/gpt-b"); got != 0 {
		t.Fatalf("fallbacks counted %v with no answer", got)
	}
}

func TestModelChain(t *testing.T) {
	rig := newFallbackRig(t, Agent{ID: "main"})
	r := rig.h.r
	tests := map[string]struct {
		agent Agent
		entry sessions.Entry
		want  []string
	}{
		"defaults":               {Agent{ID: "a"}, sessions.Entry{}, []string{"primary/gpt-a", "backup/gpt-b"}},
		"agent primary inherits": {Agent{ID: "a", Model: Model{Primary: "backup/gpt-c"}}, sessions.Entry{}, []string{"backup/gpt-c", "backup/gpt-b"}},
		"agent fallbacks":        {Agent{ID: "a", Model: Model{Fallbacks: []string{"primary/gpt-z"}}}, sessions.Entry{}, []string{"primary/gpt-a", "primary/gpt-z"}},
		"agent none":             {Agent{ID: "a", Model: Model{Primary: "backup/gpt-b", Fallbacks: []string{}}}, sessions.Entry{}, []string{"backup/gpt-b"}},
		"override then chain":    {Agent{ID: "a"}, sessions.Entry{ModelOverride: "backup/gpt-b"}, []string{"backup/gpt-b"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := r.modelChain(tc.agent, tc.entry)
			if len(got) != len(tc.want) {
				t.Fatalf("chain = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("chain = %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestNewRunnerRefusesUnknownFallback(t *testing.T) {
	p := map[string]llm.Provider{"fake": &fakeProvider{name: "fake"}}
	tests := map[string]struct {
		opts Options
		want string
	}{
		"defaults": {Options{Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m", Fallbacks: []string{"fake/n", "gone/x"}}},
			Agents: []Agent{{ID: "a"}}}, "defaults.model.fallbacks[1]: provider \"gone\" is not in providers"},
		"agent": {Options{Providers: p, Defaults: Defaults{Model: Model{Primary: "fake/m"}},
			Agents: []Agent{{ID: "a", Model: Model{Fallbacks: []string{"noslash"}}}}}, "list[0].model.fallbacks[0]: \"noslash\" is not provider/model"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := newRunner(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestFallbackOnConnectionFailure(t *testing.T) {
	rig := newFallbackRig(t, Agent{ID: "main"})
	rig.primary.Close() // nothing listens: every attempt is refused
	res, err := rig.run(t, "hello")
	if err != nil || res.Model != "backup/gpt-b" || res.Text != "reply: hello" {
		t.Fatalf("result %+v, %v; want the backup's answer", res, err)
	}
}
