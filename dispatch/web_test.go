package dispatch

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/lanes"
)

// webChat serves the real web adapter on an httptest server; the chat's
// sessionId is used directly as the conversation (peer) id.
type webChat struct {
	a   *web.Adapter
	srv *httptest.Server
}

func startWeb(t *testing.T, h *harness) *webChat {
	t.Helper()
	a := web.New(web.Options{Lookup: func(agentID, sessionID string) (string, bool, error) { return sessionID, true, nil }})
	h.d.Register(a)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, h.d.Handle) }()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", a.ServeChat)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	// Run installs the handler asynchronously.
	eventually(t, "the web adapter to run", func() bool {
		res, err := http.Post(srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusBadRequest
	})
	return &webChat{a: a, srv: srv}
}

// event is one SSE event.
type event struct{ Name, Data string }

// chat posts a message and reads the SSE stream to its end (or 10 s).
func (w *webChat) chat(t *testing.T, session, text string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := `{"message":"` + text + `","sessionId":"` + session + `"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+"/api/agents/main/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("chat %q: %v", text, err)
		return nil
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("chat %q: %s", text, res.Status)
		return nil
	}
	var evs []event
	sc := bufio.NewScanner(res.Body)
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.Name != "":
			evs = append(evs, cur)
			cur = event{}
		}
	}
	return evs
}

func last(evs []event) string {
	if len(evs) == 0 {
		return "(no events)"
	}
	return evs[len(evs)-1].Name
}

// TestWebConcurrentChatsInCollectModeAllEnd: five requests on one session
// merged into one turn each receive the merged reply and a done event.
func TestWebConcurrentChatsInCollectModeAllEnd(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Collect, Debounce: 30 * time.Millisecond, Cap: 20, Drop: lanes.DropSummarize}))
	w := startWeb(t, h)
	results := make([][]event, 5)
	var wg sync.WaitGroup
	wg.Go(func() { results[0] = w.chat(t, "s1", "first") })
	<-m.started
	for i := 1; i < 5; i++ {
		wg.Go(func() { results[i] = w.chat(t, "s1", "more") })
	}
	eventually(t, "the journal to hold the five messages", func() bool { return h.journal().Stats().Pending == 5 })
	// Accepted is not yet queued: a message queued after the first turn
	// ended and its debounce ran out would make a batch of its own.
	eventually(t, "the four later messages to queue", func() bool { return h.d.queue.MaxDepth() == 4 })
	close(m.block)
	wg.Wait()
	for i, evs := range results {
		if last(evs) != "done" {
			t.Errorf("request %d ended with %q: %+v", i, last(evs), evs)
			continue
		}
		var text string
		for _, e := range evs {
			if e.Name == "delta" {
				text += e.Data
			}
		}
		if !strings.Contains(text, "re: ") {
			t.Errorf("request %d got no reply text: %+v", i, evs)
		}
	}
	h.drained()
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the first message, then the other four merged)", n)
	}
}

// TestWebInterruptedChatEnds: in interrupt mode the interrupted request
// ends with a clear event instead of hanging.
func TestWebInterruptedChatEnds(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Interrupt, Cap: 20, Drop: lanes.DropSummarize}))
	w := startWeb(t, h)
	var first []event
	var wg sync.WaitGroup
	wg.Go(func() { first = w.chat(t, "s2", "slow") })
	<-m.started
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	second := w.chat(t, "s2", "newer")
	wg.Wait()
	if last(first) != "done" || !strings.Contains(first[0].Data+first[len(first)-2].Data, "Stopped") {
		t.Errorf("interrupted request: %+v", first)
	}
	if last(second) != "done" {
		t.Errorf("second request: %+v", second)
	}
	h.drained()
}

// TestWebReplyAfterRestartStaysInSession: the SSE client is gone after a
// restart; the turn still runs, its reply is in the session and the
// journal is drained: nothing is lost, nothing waits forever.
func TestWebReplyAfterRestartStaysInSession(t *testing.T) {
	h := newHarness(t, "", nil)
	startWeb(t, h)
	msg := in("web", "s3", "are you there")
	msg.Agent, msg.CaseSensitive = "main", true
	w := acceptOnly(t, h, msg)
	appendTurn(t, h, w, "")
	h.restart()
	startWeb(t, h)
	if n, err := h.d.Resume(h.ctx); err != nil || n != 1 {
		t.Fatalf("resume: %d, %v", n, err)
	}
	h.drained()
	hist := h.history(w.Key.String())
	if len(hist) != 2 || hist[1].Text() != "re: are you there" {
		t.Fatalf("session after restart: %+v", hist)
	}
}
