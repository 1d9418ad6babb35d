package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestPressRedeliveredAfterRestartRunsOnce: Telegram sends a button press
// again after a restart (its update was not confirmed before the daemon
// went down; the update still shows the keyboard). The press already ran
// its turn, so the redelivery runs none: one model request, one user
// message in the transcript, no second answer.
func TestPressRedeliveredAfterRestartRunsOnce(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		agents: []agents.Agent{messageAgent}, choices: testChoiceKeys(t)})
	ctx := rigCtx(t)
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			b, _ := json.Marshal(map[string]any{"action": "ask", "text": "Which one?", "choices": []string{"Tea", "Coffee"}})
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(b)}}}
		}
		return openaitest.Reply{Text: "ok " + string(rune('0'+n))}
	})
	tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: "@" + tg.BotUserName() + " tea or coffee?"})
	sent, err := tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	q := sent[0]
	kb := tg.Keyboard(tgGroup, q.MessageID)
	r.drained()
	requests := len(model.Requests())

	u, _, ok := tg.Press(tgGroup, q.MessageID, bob, "Bob", "Coffee")
	if !ok {
		t.Fatal("no Coffee button")
	}
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitModel(t, model, requests+1)
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	r.drained()

	r.stop()
	r.start()
	tg.SetKeyboard(tgGroup, q.MessageID, kb) // the redelivered update shows it as pressed
	u, _, _ = tg.Press(tgGroup, q.MessageID, bob, "Bob", "Coffee")
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := len(model.Requests()); n != requests+1 {
		t.Errorf("%d model requests, want %d: the redelivered press ran a second turn", n, requests+1)
	}
	if users := r.transcriptUsers(tgKey); len(users) != 2 {
		t.Errorf("session's user messages = %q, want the press once", users)
	}
	for _, s := range tg.Sent()[3:] {
		if strings.HasPrefix(s.Text, "ok") {
			t.Errorf("a second answer after the redelivery: %q", s.Text)
		}
	}
}
