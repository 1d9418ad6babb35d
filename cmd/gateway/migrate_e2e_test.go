package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestEndToEndGroupUpgrade (issue 25): a Telegram group upgraded to a
// supergroup keeps its conversation. After the migration's two service
// messages, a message of the new chat id is answered in the supergroup
// with the group's history in the model request; so is a late message of
// the old id; and after a restart (which hands the known migration over
// again) the conversation is still the one session, under the new key.
func TestEndToEndGroupUpgrade(t *testing.T) {
	for _, backend := range []string{"files", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model := openaitest.NewServer(t)
			yaml := e2eConfig(filepath.Join(t.TempDir(), "state"), tg, model)
			if backend == "postgres" {
				yaml += pgStorage(pgtest.NewDatabase(t))
			}
			testGroupUpgrade(t, tg, model, yaml)
		})
	}
}

func testGroupUpgrade(t *testing.T, tg *telegramtest.Server, model *openaitest.Server, yaml string) {
	_, stop := startDaemon(t, yaml)
	const oldID, newID, member = int64(-100800), int64(-1001800), int64(555)
	mention := "@" + tg.BotUserName() + " "
	tg.AddMessage(telegramtest.Message{ChatID: oldID, ChatType: "group", FromID: member, Text: mention + "remember the word mango"})
	waitReply(t, tg, "remember the word mango")

	tg.Migrate(oldID, newID)
	tg.Group(newID, member, mention+"which word did I ask you to remember")
	waitReply(t, tg, "which word did I ask you to remember")
	wantHistory(t, model, "which word did I ask you to remember", "remember the word mango")
	if n := len(sentTo(tg, newID)); n != 1 {
		t.Errorf("%d messages sent to the supergroup, want its reply", n)
	}

	// A late message of the old id joins the same conversation, and its
	// reply goes to the supergroup.
	tg.AddMessage(telegramtest.Message{ChatID: oldID, ChatType: "group", FromID: member, Text: mention + "late from the old group"})
	waitReply(t, tg, "late from the old group")
	wantHistory(t, model, "late from the old group", "remember the word mango", "which word did I ask you to remember")
	if n := len(sentTo(tg, newID)); n != 2 {
		t.Errorf("%d messages sent to the supergroup, want 2 replies", n)
	}

	stop()
	_, stop = startDaemon(t, yaml)
	tg.Group(newID, member, mention+"after the restart")
	waitReply(t, tg, "after the restart")
	wantHistory(t, model, "after the restart", "remember the word mango", "late from the old group")
	stop()

	// The one session is under the supergroup's key, none under the group's.
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(yaml, `listen: "127.0.0.1:0"`, `listen: "127.0.0.1:1"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var rows []struct{ SessionKey, SessionID string }
	if out := gw(t, cfg, "sessions", "list", "--json").want(t, 0).Stdout; json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("sessions list: %s", out)
	}
	want := fmt.Sprintf("agent:main:telegram:group:%d", newID)
	if len(rows) != 1 || rows[0].SessionKey != want {
		t.Errorf("sessions after the upgrade: %+v, want one under %s", rows, want)
	}
}

// wantHistory fails unless the model request for the message last holds
// each of earlier in an earlier user message.
func wantHistory(t *testing.T, model *openaitest.Server, last string, earlier ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, ok := lastRequestFor(model, last); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	req, ok := lastRequestFor(model, last)
	if !ok {
		t.Fatalf("%q never reached the model", last)
	}
	var before []string
	for _, m := range req.Body.Messages[:len(req.Body.Messages)-1] {
		if m.Role == "user" {
			before = append(before, m.Content)
		}
	}
	all := strings.Join(before, "\n")
	for _, e := range earlier {
		if !strings.Contains(all, e) {
			t.Errorf("model request for %q lacks the earlier %q; its earlier user messages: %q", last, e, before)
		}
	}
}
