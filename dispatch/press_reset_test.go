package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// TestPressAfterNewIsAnExpiredButton: a question's buttons pressed after
// the chat started a new session with /new belong to the archived
// session: the presser is told the question expired, the keyboard closes,
// and the label never reaches the model as if typed into the new session.
func TestPressAfterNewIsAnExpiredButton(t *testing.T) {
	pressAfterReset(t, sessions.ResetConfig{}, func(tg *telegramtest.Server, offset *atomic.Int64) {
		offset.Store(int64(10 * time.Minute))
		say(tg, alice, "Alice", "/new@"+tg.BotUserName())
		if _, err := tg.WaitSent(rigCtx(t), 3); err != nil {
			t.Fatalf("/new's answer: %v", err)
		}
	})
}

// TestPressAfterIdleResetIsAnExpiredButton: the same when the session has
// gone idle past its reset policy: the press would open a new session, so
// it is an expired button too.
func TestPressAfterIdleResetIsAnExpiredButton(t *testing.T) {
	idle := 60
	rc := sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &idle}}
	pressAfterReset(t, rc, func(_ *telegramtest.Server, offset *atomic.Int64) {
		offset.Store(int64(2 * time.Hour))
	})
}

// pressAfterReset asks a question with buttons in a Telegram group, runs
// reset (which ends the question's session) and checks that a press of the
// question is answered as expired and reaches no model.
func pressAfterReset(t *testing.T, rc sessions.ResetConfig, reset func(*telegramtest.Server, *atomic.Int64)) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	keys, err := channels.NewChoiceKeys(bytes.Repeat([]byte{3}, channels.ChoiceKeySize), 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		agents: []agents.Agent{messageAgent}, choices: keys, now: clock, reset: rc})
	ctx := rigCtx(t)
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			b, _ := json.Marshal(map[string]any{"action": "ask", "text": "Which one?", "choices": []string{"Tea", "Coffee"}})
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(b)}}}
		}
		return openaitest.Reply{Text: "ok"}
	})
	say(tg, alice, "Alice", "@"+tg.BotUserName()+" tea or coffee?")
	sent, err := tg.WaitSent(ctx, 2) // the question, then the turn's answer
	if err != nil {
		t.Fatal(err)
	}
	q := sent[0]
	r.drained()

	reset(tg, &offset)
	r.drained()
	requests := len(model.Requests())

	u, _, ok := tg.Press(tgGroup, q.MessageID, bob, "Bob", "Coffee")
	if !ok {
		t.Fatal("no Coffee button")
	}
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := len(model.Requests()); n != requests {
		t.Fatalf("a press of the archived session's question reached the model (%d requests, want %d)", n, requests)
	}
	if users := r.transcriptUsers(tgKey); strings.Contains(strings.Join(users, "|"), "Coffee") {
		t.Fatalf("the session's user messages = %q: the press was taken as typed", users)
	}
	ans := tg.CallbackAnswers()
	if len(ans) != 1 || ans[0].Text != channels.PressExpiredText {
		t.Fatalf("answers = %+v, want one %q", ans, channels.PressExpiredText)
	}
	if tg.Keyboard(tgGroup, q.MessageID) != nil {
		t.Fatal("the expired question's keyboard is still open")
	}
}
