package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
)

// TestStatusNamesTheFallbackThatAnswered: the primary answers 503 past its
// retry budget, the fallback answers the chat, and /status says which
// model answered; the fallback is counted.
func TestStatusNamesTheFallbackThatAnswered(t *testing.T) {
	primary, backup := openaitest.NewServer(t), openaitest.NewServer(t)
	primary.SetReply(func(int, openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: 503, RetryAfter: "0"}
	})
	provider := func(name string, srv *openaitest.Server) llm.Provider {
		cfg := srv.ProviderConfig()
		cfg.MaxRetries = llm.Retry(1)
		p, err := openai.New(openai.Config{Name: name, Provider: cfg, RetryBaseDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg := prometheus.NewRegistry()
	h := newHarness(t, "", nil, func(h *harness) {
		h.agent = func(o *agents.Options) {
			o.Providers["primary"] = provider("primary", primary)
			o.Providers["backup"] = provider("backup", backup)
			o.Defaults.Model = agents.Model{Primary: "primary/gpt-a", Fallbacks: []string{"backup/gpt-b"}}
			o.Registerer = reg
		}
	})
	h.handle(in("tg", "7", "hello"))
	h.drained()
	h.handle(in("tg", "7", "/status"))
	h.drained()
	texts := h.tg.texts()
	if len(texts) != 2 || texts[0] != "reply: hello" {
		t.Fatalf("sent %q: want the backup's reply, then /status", texts)
	}
	if !strings.Contains(texts[1], "Model: primary/gpt-a\n") || !strings.Contains(texts[1], "Answered by: backup/gpt-b\n") {
		t.Fatalf("/status = %q: want the configured model and the fallback that answered", texts[1])
	}
	if n := len(primary.Requests()); n != 2 {
		t.Errorf("primary saw %d requests, want 2 (one retry)", n)
	}
	if got, err := testutil.GatherAndCount(reg, "gateway_model_fallbacks_total"); err != nil || got != 1 {
		t.Errorf("gateway_model_fallbacks_total series = %d, %v; want 1", got, err)
	}
}
