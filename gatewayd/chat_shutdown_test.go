package gatewayd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/configs"
)

// runGraced runs the daemon of the config file path with a 100 ms grace
// period until stop, which cancels it and waits for Run to return.
func runGraced(t *testing.T, path string, log *zap.Logger) (addr string, stop func()) {
	t.Helper()
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	d, err := New(cfg, Options{ConfigPath: path, Logger: log, Grace: 100 * time.Millisecond,
		OnReady: func(a string) { ready <- a }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return addr, stop
}

// TestChatStreamWaitingAtShutdownEnds: a web chat whose turn the shutdown
// cuts (the model still thinking when the grace period ends) has its
// stream ended as the HTTP server shuts down, without a final event, so
// the page asks for the rest from the next process. Before, the stream
// stayed open: the shutdown waited for it to its 5 s deadline ("http
// shutdown: context deadline exceeded") and left it hanging after Run
// returned.
func TestChatStreamWaitingAtShutdownEnds(t *testing.T) {
	model := openaitest.NewServer(t)
	release := make(chan struct{})
	defer close(release)
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Text: "never sent", Hold: release} // cut by the shutdown
		}
		return openaitest.Reply{Text: "answer: " + r.LastUserText()}
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	yaml := reloadYAML(filepath.Join(dir, "state"), fmt.Sprintf(`providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, model.BaseURL()))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observedLogger(t)
	addr, stop := runGraced(t, path, log)
	res, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	turn := res.Header.Get("X-Turn-Id")
	waitFor(t, func() bool { return model.Calls() >= 1 })
	stop()

	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(res.Body))
		rest <- string(b)
	}()
	select {
	case got := <-rest:
		if strings.Contains(got, "event: done") {
			t.Errorf("the cut turn's stream ended with a final event: %q", got)
		}
	case <-time.After(10 * time.Second): // a bound against a hang, not a timing
		t.Fatal("the chat stream is still open after the daemon stopped")
	}
	if n := logs.FilterMessage("http shutdown").Len(); n > 0 {
		t.Errorf("the HTTP server's shutdown waited for the chat stream to its deadline: %v",
			logs.FilterMessage("http shutdown").All()[0].ContextMap())
	}

	// The next process answers the client that asks again.
	addr, _ = runGraced(t, path, zap.NewNop())
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/agents/main/chat/turns/"+turn, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", turn+"/0")
	again, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Body.Close()
	b, _ := io.ReadAll(again.Body)
	if again.StatusCode != http.StatusOK || !strings.Contains(string(b), `"text":"answer: hi"`) ||
		!strings.Contains(string(b), "event: done") {
		t.Errorf("resume after the restart: %s %s", again.Status, b)
	}
}
