package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
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

// TestChoicesDiscordEndToEnd: the same on Discord, in a thread: the
// question's buttons are components; Mallory's press (not in the guild's
// allowFrom) is acknowledged without change, a forged custom_id is told it
// is not valid, Carol's press continues the thread's session as Carol and
// the callback disables the buttons, the chosen one marked.
func TestChoicesDiscordEndToEnd(t *testing.T) {
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(dc.Close)
	dc.AddChannel(&discordgo.Channel{ID: "900", GuildID: "50", Type: discordgo.ChannelTypeGuildText})
	dc.AddChannel(&discordgo.Channel{ID: "901", GuildID: "50", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "900"})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, dc: dc, room: channels.DefaultRoom("discord"), agents: []agents.Agent{messageAgent},
		choices: testChoiceKeys(t),
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupAllowlist,
			Groups: map[string]access.GroupRule{"50": {AllowFrom: []string{"7"}}}}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			b, _ := json.Marshal(map[string]any{"action": "ask", "text": "Ship it?", "choices": []string{"Yes", "Not yet"}})
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(b)}}}
		}
		return openaitest.Reply{Text: "noted"}
	})
	carol := &discordgo.User{ID: "7", Username: "carol"}
	mallory := &discordgo.User{ID: "8", Username: "mallory"}
	dc.SendMessageCreate(&discordgo.Message{ChannelID: "901", GuildID: "50", Author: carol,
		Content: "<@" + dc.BotUser().ID + "> release?", Mentions: []*discordgo.User{dc.BotUser()}})
	sent, err := dc.WaitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	q := sent[0]
	if q.ChannelID != "901" || q.Content != "Ship it?" {
		t.Fatalf("question = %+v", q)
	}
	before := dc.Buttons(q.MessageID)
	if len(before) != 1 || len(before[0]) != 2 || before[0][1].Label != "Not yet" || before[0][0].Disabled {
		t.Fatalf("buttons = %+v", before)
	}
	r.drained()
	requests := len(model.Requests())

	i, ok := dc.ButtonPress("901", q.MessageID, mallory, "Yes")
	if !ok {
		t.Fatal("no Yes button")
	}
	refused := dc.SendInteraction(i)
	dc.SendInteraction(dc.ComponentPress("901", q.MessageID, carol, "c1.AAAAAAAA.0.zzzz.AAAAAAAAAAAAAAAA"))
	reps, err := dc.WaitInteractionReplies(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].InteractionID != refused { // two members' presses are answered in either order
		reps[0], reps[1] = reps[1], reps[0]
	}
	if reps[0].Type != discordgo.InteractionResponseDeferredMessageUpdate ||
		reps[1].Type != discordgo.InteractionResponseChannelMessageWithSource || reps[1].Content != channels.PressInvalidText ||
		reps[1].Flags != discordgo.MessageFlagsEphemeral {
		t.Fatalf("answers = %+v", reps)
	}
	r.drained()
	if n := len(model.Requests()); n != requests {
		t.Fatalf("a refused or forged press reached the model (%d requests, want %d)", n, requests)
	}

	i, _ = dc.ButtonPress("901", q.MessageID, carol, "Not yet")
	dc.SendInteraction(i)
	got := lastUser(waitModel(t, model, requests+1))
	if !strings.Contains(got, "Not yet") || !strings.Contains(got, "carol") {
		t.Fatalf("model input after the press:\n%s\nwant carol's Not yet", got)
	}
	after, err := dc.WaitButtonsChanged(ctx, q.MessageID, before)
	if err != nil {
		t.Fatal(err)
	}
	if !after[0][0].Disabled || !after[0][1].Disabled || after[0][1].Style != discordgo.SuccessButton {
		t.Fatalf("buttons after the press = %+v, want all disabled, Not yet marked", after)
	}
	if _, ok := dc.ButtonPress("901", q.MessageID, carol, "Yes"); ok {
		t.Fatal("a disabled button can still be pressed")
	}
	r.drained()
	if users := r.transcriptUsers("agent:main:discord:channel:900:thread:901"); len(users) != 2 || !strings.Contains(users[1], "Not yet") {
		t.Fatalf("thread session's user messages = %q", users)
	}
}

// TestPressIsNeverACommand: a press whose text reads like a command or a
// reset trigger (a label the gateway would never sign, reaching the
// dispatcher all the same) goes to the model as text; the session is not
// reset and no command answers.
func TestPressIsNeverACommand(t *testing.T) {
	h := newHarness(t, "", nil)
	first := in("tg", "42", "hello")
	h.handle(first)
	h.drained()
	for _, text := range []string{"/new", "/reset", "/status"} {
		p := in("tg", "42", text)
		p.Press = true
		h.handle(p)
	}
	h.drained()
	hist := h.history("agent:main:tg:direct:42")
	var users []string
	for _, m := range hist {
		if m.Role == "user" {
			users = append(users, m.Text())
		}
	}
	if len(users) < 2 || !strings.Contains(users[0], "hello") || !strings.Contains(strings.Join(users, "|"), "/status") {
		t.Fatalf("session's user messages = %q, want hello then the presses as text in one session", users)
	}
}
