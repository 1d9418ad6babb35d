package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	sse "github.com/tmaxmax/go-sse"

	"github.com/gateway/gateway/internal/webtest"
)

// turnChat posts a message and returns its turn id and the stream's text.
func turnChat(t *testing.T, env *webtest.Env, message string) (turn, text string) {
	t.Helper()
	c := newClient(t, env, "")
	res := c.raw("POST", "/api/agents/main/chat", map[string]string{"message": message})
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("chat: %s", res.Status)
	}
	turn = res.Header.Get("X-Turn-Id")
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "delta" {
			text += strings.TrimSuffix(strings.TrimPrefix(ev.Data, `{"text":"`), `"}`)
		}
	}
	return turn, text
}

// getTurn asks env for turn as an event stream (lastID: Last-Event-ID) or
// as JSON, and returns the status and body.
func getTurn(t *testing.T, env *webtest.Env, turn, lastID string, stream bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+"/api/agents/main/chat/turns/"+turn, nil)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A client whose daemon restarted fetches the finished reply by its turn
// id: from the transcript, since the new process never streamed it; a
// turn id made of another conversation and a real message id, or of
// random ids, reads nothing.
func TestChatReplyFetchedByTurnAfterRestart(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	turnA, text := turnChat(t, env, "first conversation")
	turnB, _ := turnChat(t, env, "second conversation")
	if text != "echo: first conversation" || turnA == "" || turnB == "" {
		t.Fatalf("chat: turn %q text %q", turnA, text)
	}
	env.Stop()
	env = webtest.Start(t, webtest.Config{StateDir: env.StateDir})

	code, body := getTurn(t, env, turnA, turnA+"/2", true)
	want := "id: " + turnA + "/reply\nevent: reply\ndata: {\"replace\":true,\"text\":\"echo: first conversation\"}\n\n" +
		"id: " + turnA + "/done\nevent: done\n"
	if code != http.StatusOK || !strings.HasPrefix(body, want) || !strings.Contains(body, `"sessionId":"`) {
		t.Errorf("after the restart: %d\n%s\nwant the reply whole, then done with the session:\n%s", code, body, want)
	}
	code, body = getTurn(t, env, turnA, "", false)
	if code != http.StatusOK || !strings.Contains(body, `"status":"answered","text":"echo: first conversation"`) {
		t.Errorf("JSON after the restart: %d %s", code, body)
	}
	code, _ = getTurn(t, env, turnA, turnA+"/done", true)
	if code != http.StatusNoContent {
		t.Errorf("after done: %d, want 204", code)
	}

	peerB, _, _ := strings.Cut(turnB, ".")
	_, msgA, _ := strings.Cut(turnA, ".")
	for _, guess := range []string{peerB + "." + msgA, uuid.NewString() + "." + msgA, uuid.NewString() + "." + uuid.NewString()} {
		for _, stream := range []bool{true, false} {
			code, body := getTurn(t, env, guess, "", stream)
			if code != http.StatusNotFound || !strings.Contains(body, "turn "+guess+" not found") || strings.Contains(body, "echo") {
				t.Errorf("guessed turn %s (stream %v): %d %s, want 404", guess, stream, code, body)
			}
		}
	}
	code, body = getTurn(t, env, "not-a-turn", "", true)
	if code != http.StatusBadRequest || !strings.Contains(body, "two UUIDs") {
		t.Errorf("malformed turn id: %d %s", code, body)
	}
}
