package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// runDaemonUntilReady runs a daemon for cfg in the background, as `gateway
// run` does, and returns its address once ready; stop cancels it and
// reports an error Run returned.
func runDaemonUntilReady(t *testing.T, cfg *configs.Config, opts gatewayd.Options) (addr string, stop func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	ready := make(chan string, 1)
	opts.OnReady = func(a string) { ready <- a }
	d, err := gatewayd.New(cfg, opts)
	if err != nil {
		t.Fatalf("new daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon exited before ready: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("daemon not ready after 30s")
	}
	if got := d.Addr(); got != addr {
		t.Errorf("Addr() = %q, OnReady had %q", got, addr)
	}
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	return addr, stop
}

// startDaemon runs a daemon for the YAML until the returned stop function
// is called (or the test ends).
func startDaemon(t *testing.T, yaml string) (addr string, stop func()) {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return runDaemonUntilReady(t, cfg, gatewayd.Options{})
}

// startFromFile runs a daemon with a config file path (so it is watched),
// as `gateway run --config path` does.
func startFromFile(t *testing.T, path string) string {
	t.Helper()
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	addr, _ := runDaemonUntilReady(t, cfg, gatewayd.Options{ConfigPath: path})
	return addr
}

func reloadYAML(stateDir, extra string) string {
	return "stateDir: " + stateDir + "\nhttp: {listen: \"127.0.0.1:0\"}\nlog: {level: debug, format: console}\n" + extra
}

// chat posts one web chat message and returns the reply text and session id.
func chat(t *testing.T, addr, sessionID, text string) (reply, sid string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text, "sessionId": sessionID})
	resp, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d)
			switch event {
			case "delta":
				reply += d["text"].(string)
			case "error":
				t.Fatalf("chat error event: %v", d)
			case "done":
				sid, _ = d["sessionId"].(string)
				return reply, sid
			}
		}
	}
	t.Fatalf("stream ended without done: %v", sc.Err())
	return "", ""
}
