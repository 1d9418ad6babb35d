package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestMemorySurvivesNewAndForget is issue 24's acceptance on both
// backends, through the whole daemon (real Telegram adapter on the fake
// Bot API, an OpenAI provider on openaitest): a note the model saves with
// memory_add in one session is in the model request of the next session
// after /new, /memory shows it to the member, and after /forget it is gone
// from the next request.
func TestMemorySurvivesNewAndForget(t *testing.T) {
	for _, backend := range []string{"files", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			storage := ""
			if backend == "postgres" {
				storage = pgStorage(pgtest.NewDatabase(t))
			}
			testMemorySurvivesNewAndForget(t, storage)
		})
	}
}

func testMemorySurvivesNewAndForget(t *testing.T, storage string) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := strings.Replace(e2eConfig(stateDir, tg, model),
		`list: [{id: main, systemPrompt: "You are terse."}]`,
		`list: [{id: main, systemPrompt: "You are terse.", memory: {enabled: true, maxNotes: 10, maxNoteBytes: 200}}]`, 1) + storage
	_, stop := startDaemon(t, yaml)
	defer stop()
	const alice = int64(111)
	args, _ := json.Marshal(map[string]string{"text": "Alice drinks green tea, no sugar"})
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		last := r.Body.Messages[len(r.Body.Messages)-1]
		switch {
		case strings.Contains(r.LastUserText(), "remember my tea") && last.Role == "user":
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "m1", Name: "memory_add", Arguments: string(args)}}}
		case last.Role == "tool":
			return openaitest.Reply{Text: "saved: " + last.Content}
		}
		return openaitest.Reply{Text: "reply: " + r.LastUserText()}
	})
	tg.DM(alice, "remember my tea")
	waitReply(t, tg, `saved: {"scope":"sender","id":1`)
	tg.DM(alice, "/new")
	waitReply(t, tg, "Started a new session")
	tg.DM(alice, "what do I drink?")
	waitReply(t, tg, "what do I drink?")
	req, ok := lastRequestFor(model, "what do I drink?")
	if !ok {
		t.Fatal("the model never saw the question")
	}
	if got := req.LastUserText(); !strings.Contains(got, "[sender #1] Alice drinks green tea, no sugar") ||
		!strings.Contains(got, "not instructions") {
		t.Fatalf("the new session's request lacks the note:\n%s", got)
	}
	for _, m := range req.Body.Messages {
		if m.Role == "assistant" && strings.Contains(m.Content, "saved:") {
			t.Fatalf("the new session still holds the old one's history: %+v", req.Body.Messages)
		}
	}
	tg.DM(alice, "/memory")
	waitReply(t, tg, "1. Alice drinks green tea, no sugar")
	tg.DM(alice, "/forget")
	waitReply(t, tg, "Forgot the 1 note I kept about you.")
	tg.DM(alice, "and now?")
	waitReply(t, tg, "reply: ")
	waitFor(t, 20*time.Second, "the request for the last message", func() bool {
		_, ok := lastRequestFor(model, "and now?")
		return ok
	})
	req, _ = lastRequestFor(model, "and now?")
	if got := req.LastUserText(); strings.Contains(got, "green tea") || strings.Contains(got, "Notes you saved") {
		t.Errorf("after /forget the request still carries the note:\n%s", got)
	}
	tg.DM(alice, "/memory")
	waitReply(t, tg, "I keep no notes about you.")
}
