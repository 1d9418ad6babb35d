package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/gatewayd"
)

// statusCap bounds each wait for a state change: generous, the adapter's
// backoff doubles up to 30 s between attempts.
const statusCap = 2 * time.Minute

// TestStatusReportsTelegramOutage (issue 25 acceptance): `gateway status`
// against the daemon assembled as `gateway run` does reports the Telegram
// account connected, then failing with its last error and exit code 1
// while the Bot API is down, then connected again with exit code 0 once it
// is back; the last message in and out are shown.
func TestStatusReportsTelegramOutage(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	state := filepath.Join(t.TempDir(), "state")
	must(t, os.MkdirAll(state, 0o700))
	addr := startFromFile(t, writeYAML(t, e2eConfig(state, tg, model)))
	cfg := writeConfig(t, state, addr, "")

	st, r := waitStatus(t, cfg, "connected", func(st gatewayd.Status) bool {
		c := telegramAccount(st)
		return c != nil && c.State == channels.ConnConnected
	})
	if r.Code != 0 || st.Overall != gatewayd.StatusOK {
		t.Fatalf("healthy daemon: exit %d, overall %q, problems %v", r.Code, st.Overall, st.Problems)
	}
	if c := telegramAccount(st); c.Mode != "polling" {
		t.Errorf("telegram mode %q, want polling", c.Mode)
	}
	if i := slices.IndexFunc(st.Providers, func(p agents.ProviderStatus) bool { return p.Name == "fake" }); i < 0 || st.Providers[i].Breaker.State != "closed" {
		t.Errorf("providers: %+v", st.Providers)
	}
	if st.Storage.Kind != "files" || !st.Storage.Healthy {
		t.Errorf("storage: %+v", st.Storage)
	}

	tg.DM(111, "before the outage")
	waitReply(t, tg, "reply: before the outage")
	st, _ = waitStatus(t, cfg, "last inbound and outbound recorded", func(st gatewayd.Status) bool {
		c := telegramAccount(st)
		return c != nil && !c.LastInbound.IsZero() && !c.LastOutbound.IsZero()
	})

	tg.Stop()
	st, r = waitStatus(t, cfg, "failing", func(st gatewayd.Status) bool {
		c := telegramAccount(st)
		return c != nil && c.State == channels.ConnFailing
	})
	c := telegramAccount(st)
	if r.Code != statusExitFailing || st.Overall != gatewayd.StatusFailing {
		t.Fatalf("outage: exit %d, overall %q; want %d, failing", r.Code, st.Overall, statusExitFailing)
	}
	if c.LastError == "" || c.Failures < channels.FailingAfter || c.Since.IsZero() {
		t.Errorf("failing account without its error, count or start: %+v", c.Connection)
	}
	if len(st.Problems) == 0 || !strings.Contains(strings.Join(st.Problems, "\n"), "telegram/default failing") {
		t.Errorf("problems do not name the account: %v", st.Problems)
	}
	// The human form says the same and exits the same.
	h := gw(t, cfg, "status")
	if h.Code != statusExitFailing || !strings.Contains(h.Stdout, "FAILING") || !strings.Contains(h.Stdout, "telegram  default") {
		t.Errorf("status (text) during the outage: exit %d\n%s\n%s", h.Code, h.Stdout, h.Stderr)
	}

	must(t, tg.Restart())
	st, r = waitStatus(t, cfg, "connected again", func(st gatewayd.Status) bool {
		c := telegramAccount(st)
		return c != nil && c.State == channels.ConnConnected
	})
	if r.Code != 0 || st.Overall != gatewayd.StatusOK {
		t.Fatalf("after the outage: exit %d, overall %q, problems %v", r.Code, st.Overall, st.Problems)
	}
	if c := telegramAccount(st); c.LastError == "" || c.Failures != 0 {
		t.Errorf("recovered account: want the last error kept and no failures counted: %+v", c.Connection)
	}
	tg.DM(111, "after the outage")
	waitReply(t, tg, "reply: after the outage")
}

// TestStatusNoDaemon: without a daemon, status exits 3 and says so.
func TestStatusNoDaemon(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "")
	r := gw(t, cfg, "status")
	if r.Code != statusExitNoAnswer || !strings.Contains(r.Stderr, "not running") {
		t.Fatalf("status without a daemon: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// waitStatus runs `gateway status --json` until cond holds (what names
// it), within statusCap; it returns the last status and run.
func waitStatus(t *testing.T, cfg, what string, cond func(gatewayd.Status) bool) (gatewayd.Status, result) {
	t.Helper()
	deadline := time.Now().Add(statusCap)
	for {
		r := gw(t, cfg, "status", "--json")
		var st gatewayd.Status
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatalf("status --json: exit %d, not JSON (%v):\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
		}
		if cond(st) {
			return st, r
		}
		if time.Now().After(deadline) {
			t.Fatalf("status not %s within %s; last (exit %d):\n%s", what, statusCap, r.Code, r.Stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func telegramAccount(st gatewayd.Status) *gatewayd.ChannelStatus {
	for i, c := range st.Channels {
		if c.Channel == "telegram" && c.Account == "default" {
			return &st.Channels[i]
		}
	}
	return nil
}
