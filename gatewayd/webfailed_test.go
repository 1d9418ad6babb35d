package gatewayd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// doneOf posts a web chat message into session sid and returns the data
// of its stream's final event; started, when set, is called once the
// stream's opening event came.
func doneOf(t *testing.T, addr, sid, text string, started func()) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text, "sessionId": sid})
	res, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Errorf("%s: %s %s", text, res.Status, b)
		return nil
	}
	sc := bufio.NewScanner(res.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "turn" && started != nil:
			started()
		case strings.HasPrefix(line, "data: ") && event == "done":
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Errorf("%s: the stream ended without its final event (%v)", text, sc.Err())
	return nil
}

// scriptedModel is an OpenAI-compatible model whose n-th call (from 1)
// does what act says: "cut" (the connection breaks mid-answer), "hold"
// (thinks until the call is cancelled) or anything else (answers "fine").
// It returns the config of a daemon using it and the calls made so far.
func scriptedModel(t *testing.T, act func(n int32) string) (path string, calls *atomic.Int32) {
	t.Helper()
	calls = &atomic.Int32{}
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read: the server then notices a client gone
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string) {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":%s}]}`+"\n\n", delta)
			w.(http.Flusher).Flush()
		}
		switch act(n) {
		case "cut":
			chunk(`{"content":"The ans"}`)
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		case "hold":
			<-r.Context().Done()
			return
		}
		chunk(`{"content":"fine"}`)
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(model.Close) // after the daemon's stop
	dir := t.TempDir()
	path = filepath.Join(dir, "gateway.yaml")
	yaml := reloadYAML(filepath.Join(dir, "state"), fmt.Sprintf(`providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 0}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main}]
`, model.URL))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, calls
}

// TestWebFailedTurnKeepsItsSession: a turn of an existing web session that
// ends in a notice — the model failed mid-answer, or /stop stopped it —
// ends its stream with the session's id, as a reply does. It ended with
// sessionId "", which the page takes for a session deleted by /delete: it
// left the conversation, said "The session was deleted" and sent the next
// message into a new chat.
func TestWebFailedTurnKeepsItsSession(t *testing.T) {
	path, calls := scriptedModel(t, func(n int32) string {
		return map[int32]string{2: "cut", 3: "hold"}[n]
	})
	addr := startFromFile(t, path, &fakeClock{})
	sid, _ := doneOf(t, addr, "", "first", nil)["sessionId"].(string)
	if sid == "" {
		t.Fatal("no session for the first message")
	}
	if got := doneOf(t, addr, sid, "second", nil)["sessionId"]; got != sid {
		t.Errorf("the failed turn's final event: sessionId %q, want the session's %q", got, sid)
	}
	stopped := make(chan map[string]any, 1)
	got := doneOf(t, addr, sid, "third", func() {
		go func() {
			for calls.Load() < 3 { // the model thinks: /stop has a run to stop
				time.Sleep(10 * time.Millisecond)
			}
			stopped <- doneOf(t, addr, sid, "/stop", nil)
		}()
	})
	if got["sessionId"] != sid {
		t.Errorf("the stopped turn's final event: sessionId %q, want the session's %q", got["sessionId"], sid)
	}
	if d := <-stopped; d["sessionId"] != sid {
		t.Errorf("/stop's final event: sessionId %q, want %q", d["sessionId"], sid)
	}
}

// TestWebFailedFirstTurnNamesItsSession: a new chat whose first turn fails
// ends with the session its message went into, so the page's next message
// continues it; with no session named, the page stayed a new chat and the
// next message opened a second session beside the first.
func TestWebFailedFirstTurnNamesItsSession(t *testing.T) {
	path, _ := scriptedModel(t, func(n int32) string {
		if n == 1 {
			return "cut"
		}
		return ""
	})
	addr := startFromFile(t, path, &fakeClock{})
	sid, _ := doneOf(t, addr, "", "first", nil)["sessionId"].(string)
	if sid == "" {
		t.Fatal("the failed first turn's final event names no session")
	}
	if got := doneOf(t, addr, sid, "again", nil)["sessionId"]; got != sid {
		t.Errorf("the next message's session %q, want %q", got, sid)
	}
}
