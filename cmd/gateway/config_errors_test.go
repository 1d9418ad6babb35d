package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// TestRefusedConfigsOneMessageEverywhere: each refused config is refused by
// `config validate`, by `run` and by hot reload with the same message, and
// the message carries file:line:col of the key, the key as typed, what was
// expected and the suggestion.
func TestRefusedConfigsOneMessageEverywhere(t *testing.T) {
	state := t.TempDir()
	head := "stateDir: " + state + "\nhttp: {listen: \"127.0.0.1:0\"}\nlog: {level: warn, format: console}\n"
	tests := []struct {
		name, yaml string
		want       string // after "<file>:"
	}{
		{"agent id not normalised", "agents:\n  list:\n    - id: Main\n",
			`6:7: agents.list[0].id: "Main" is not an agent id`},
		{"list for a number", "session:\n  maintenance:\n    maxEntries: [1, 2]\n",
			`6:5: session.maintenance.maxEntries: expected a whole number, got a list`},
		{"yes for a boolean", "channels:\n  telegram:\n    accounts:\n      default:\n        token: '1:a'\n        requireMention: yes\n",
			`9:9: channels.telegram.accounts.default.requireMention: expected true or false, got "yes" (write true or false`},
		{"duration without a unit", "Session:\n  LockTimeout: 10 sec\n",
			`5:3: Session.LockTimeout: "10 sec" is not a duration (write it with a unit`},
		{"enum misspelled", "session:\n  dmScope: per-chanel-peer\n",
			`5:3: session.dmScope: "per-chanel-peer" is not main, per-peer, per-channel-peer, per-account-channel-peer or global (did you mean "per-channel-peer"?)`},
		{"unknown key", "messages:\n  queue:\n    debounse: 1s\n",
			`6:5: messages.queue.debounse: unknown key (did you mean "debounce"?)`},
		{"binding to a missing agent", "bindings:\n  - agentId: helper\n    match: {channel: telegram}\n",
			`5:5: bindings[0].agentId: agent "helper" is not in agents.list`},
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	write := func(y string) {
		t.Helper()
		tmp := filepath.Join(dir, ".gateway.yaml.tmp")
		if err := os.WriteFile(tmp, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(head)
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	addr, _ := runDaemonUntilReady(t, cfg, gatewayd.Options{ConfigPath: path, Logger: zap.New(core)})
	// The watcher starts beside the API: a valid change applied (by the
	// watcher's first read or by the save's event) says it is watching.
	write(head + "messages: {queue: {mode: followup}}\n")
	waitMetric(t, addr, `gateway_config_reloads_total{result="applied"} 1`)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.TakeAll()
			write(head + tt.yaml)
			want := "config: " + path + ":" + tt.want

			validate := strings.TrimSpace(strings.TrimPrefix(gw(t, path, "config", "validate").want(t, exitFailure).Stderr, "gateway: "))
			if !strings.HasPrefix(validate, want) {
				t.Errorf("config validate:\n got %s\nwant %s...", validate, want)
			}
			run := strings.TrimSpace(strings.TrimPrefix(gw(t, path, "run").want(t, exitFailure).Stderr, "gateway: "))
			if run != validate {
				t.Errorf("run:\n got %s\nwant %s", run, validate)
			}
			reload := waitReloadRejected(t, logs)
			if reload != validate {
				t.Errorf("hot reload:\n got %s\nwant %s", reload, validate)
			}
		})
	}
}

// waitMetric waits until the daemon's /metrics has the line.
func waitMetric(t *testing.T, addr, line string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a cap against a hang, not a timing check
	for time.Now().Before(deadline) {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), line+"\n") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("/metrics never had %s", line)
}

// waitReloadRejected returns the error of the next "config reload rejected"
// log entry (the watcher debounces the save first).
func waitReloadRejected(t *testing.T, logs *observer.ObservedLogs) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a cap against a hang, not a timing check
	for time.Now().Before(deadline) {
		for _, e := range logs.FilterMessageSnippet("config reload rejected").All() {
			if msg, ok := e.ContextMap()["error"].(string); ok {
				return msg
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no reload was rejected")
	return ""
}
