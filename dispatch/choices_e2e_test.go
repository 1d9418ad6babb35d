package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

func testChoiceKeys(t *testing.T) *channels.ChoiceKeys {
	t.Helper()
	k, err := channels.NewChoiceKeys(bytes.Repeat([]byte{3}, channels.ChoiceKeySize), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestChoicesTelegramEndToEnd: real Telegram adapter on the fake Bot API,
// the access policy, the journal and an OpenAI provider on openaitest. The
// model asks with buttons through the message tool; a press by Mallory
// (in the group, not admitted) does nothing and leaves the keyboard; a
// forged press never reaches the agent; Bob's press continues the group's
// session as a message from Bob whose text is the label, and closes the
// keyboard.
func TestChoicesTelegramEndToEnd(t *testing.T) {
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
	sent, err := tg.WaitSent(ctx, 2) // the question, then the turn's answer
	if err != nil {
		t.Fatal(err)
	}
	q := sent[0]
	if q.Text != "Which one?" || len(tg.Keyboard(tgGroup, q.MessageID)) == 0 {
		t.Fatalf("question = %+v, keyboard %+v", q, tg.Keyboard(tgGroup, q.MessageID))
	}
	r.drained()
	requests := len(model.Requests())

	u, _, ok := tg.Press(tgGroup, q.MessageID, mallory, "Mallory", "Tea")
	if !ok {
		t.Fatal("no Tea button")
	}
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	u, _ = tg.PressData(tgGroup, q.MessageID, bob, "Bob", "c1.AAAAAAAA.0.zzzz.AAAAAAAAAAAAAAAA")
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := len(model.Requests()); n != requests {
		t.Fatalf("a refused or forged press reached the model (%d requests, want %d)", n, requests)
	}
	if tg.Keyboard(tgGroup, q.MessageID) == nil {
		t.Fatal("a refused press closed the keyboard")
	}
	if ans := tg.CallbackAnswers(); len(ans) != 2 || ans[0].Text != "" || ans[1].Text != channels.PressInvalidText {
		t.Fatalf("answers = %+v", ans)
	}

	u, _, _ = tg.Press(tgGroup, q.MessageID, bob, "Bob", "Coffee")
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := lastUser(waitModel(t, model, requests+1))
	if !strings.Contains(got, "Bob") || !strings.Contains(got, "Coffee") || strings.Contains(got, "Tea") {
		t.Fatalf("model input after the press:\n%s\nwant Bob's Coffee", got)
	}
	if tg.Keyboard(tgGroup, q.MessageID) != nil {
		t.Fatal("keyboard still open after the press")
	}
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	r.drained()
	users := r.transcriptUsers(tgKey)
	if len(users) != 2 || !strings.Contains(users[1], "Coffee") {
		t.Fatalf("session's user messages = %q, want the press as the second", users)
	}
}
