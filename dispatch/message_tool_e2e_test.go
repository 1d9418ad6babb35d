package dispatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// TestMessageToolGroupEndToEnd: real Telegram adapter polling the fake Bot
// API, the access policy and an OpenAI provider on openaitest. A message
// the bot heard in the group before it was addressed (room history) shows
// its id to the model, which reacts to it and replies to it; a message from
// a sender the group does not admit never reached the agent, so the tool
// calls it unknown and nothing is sent for it.
func TestMessageToolGroupEndToEnd(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		agents: []agents.Agent{messageAgent}})
	ctx := rigCtx(t)
	_, bobMsg := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: bob, FromName: "Bob", Text: "the build is red"})
	lastUpd, malloryMsg := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: mallory, FromName: "Mallory", Text: "psst"})
	if err := tg.WaitConfirmed(ctx, lastUpd); err != nil {
		t.Fatal(err)
	}
	args := func(a map[string]any) string { b, _ := json.Marshal(a); return string(b) }
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n > 0 {
			return openaitest.Reply{Text: "noted"}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{
			{ID: "c1", Name: "message", Arguments: args(map[string]any{"action": "react", "emoji": "👀", "messageId": strconv.Itoa(bobMsg)})},
			{ID: "c2", Name: "message", Arguments: args(map[string]any{"action": "reply", "messageId": strconv.Itoa(bobMsg), "text": "on it"})},
			{ID: "c3", Name: "message", Arguments: args(map[string]any{"action": "react", "emoji": "👎", "messageId": strconv.Itoa(malloryMsg)})},
		}}
	})
	_, aliceMsg := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: "@" + tg.BotUserName() + " look at that"})
	got := lastUser(waitModel(t, model, 1))
	if !inOrder(got, fmt.Sprintf("Bob [message_id: %d]: the build is red", bobMsg), historyFooter, fmt.Sprintf("[message_id: %d] [Alice] look at that", aliceMsg)) {
		t.Fatalf("model input:\n%s\nwant the ids of the history message and of Alice's", got)
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil { // the tool's reply and the answer
		t.Fatal(err)
	}
	r.drained()
	if re := tg.Reactions(); len(re) != 1 || re[0].MessageID != bobMsg || re[0].ChatID != tgGroup {
		t.Errorf("reactions = %+v, want 👀 on Bob's message only", re)
	}
	var texts []string
	for _, s := range tg.Sent() {
		texts = append(texts, s.Text)
		if s.Text == "on it" && s.ReplyTo != bobMsg {
			t.Errorf("tool reply quotes %d, want Bob's %d", s.ReplyTo, bobMsg)
		}
	}
	if !slices.Equal(texts, []string{"on it", "noted"}) {
		t.Errorf("sent %q, want the tool's reply then the answer", texts)
	}
	var results []string
	for _, m := range model.Requests()[1].Body.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 3 || !strings.Contains(results[0], `"ok":true`) || !strings.Contains(results[1], `"ok":true`) ||
		!strings.Contains(results[2], "is not one seen in this chat") {
		t.Errorf("tool results the model read: %q", results)
	}
}

// TestMessageToolKeepsItsReaction: in a room with an ackReaction, a
// reaction the tool put on the answered message is not taken off with the
// acknowledgement (Telegram keeps one reaction per bot: removing the ack
// would remove the tool's).
func TestMessageToolKeepsItsReaction(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.AckReaction = "👀"
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room, agents: []agents.Agent{messageAgent}})
	ctx := rigCtx(t)
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n > 0 {
			return openaitest.Reply{Text: "thanks"}
		}
		if _, err := tg.WaitReactions(ctx, 1); err != nil { // the acknowledgement first
			t.Error(err)
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: `{"action":"react","emoji":"👍"}`}}}
	})
	_, aliceMsg := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: "@" + tg.BotUserName() + " great work"})
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.drained()
	re := tg.Reactions()
	if len(re) != 2 || re[0].MessageID != aliceMsg || !slices.Equal(re[0].Emoji, []string{"👀"}) ||
		re[1].MessageID != aliceMsg || !slices.Equal(re[1].Emoji, []string{"👍"}) {
		t.Fatalf("reactions = %+v, want 👀 then 👍 on Alice's message, and no removal", re)
	}
}

// TestMessageToolDiscordEndToEnd: the real Discord adapter on the fake's
// websocket gateway and REST. A channel message heard before the mention
// can be reacted to and replied to; a message of a thread under that
// channel is another room (refused); the tool's reply can be deleted.
func TestMessageToolDiscordEndToEnd(t *testing.T) {
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(dc.Close)
	dc.AddChannel(&discordgo.Channel{ID: "900", GuildID: "50", Type: discordgo.ChannelTypeGuildText})
	dc.AddChannel(&discordgo.Channel{ID: "901", GuildID: "50", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "900"})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, dc: dc, room: channels.DefaultRoom("discord"), agents: []agents.Agent{messageAgent},
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	carol := &discordgo.User{ID: "7", Username: "carol"}
	inThread := dc.SendMessageCreate(&discordgo.Message{ChannelID: "901", GuildID: "50", Author: carol, Content: "thread talk"})
	eventually(t, "kept in thread", func() bool { return r.mgr.History().Len("agent:main:discord:channel:900:thread:901") == 1 })
	alpha := dc.SendMessageCreate(&discordgo.Message{ChannelID: "900", GuildID: "50", Author: carol, Content: "alpha"})
	eventually(t, "kept", func() bool { return r.mgr.History().Len("agent:main:discord:channel:900") == 1 })
	call := func(id string, a map[string]any) openaitest.ToolCall {
		b, _ := json.Marshal(a)
		return openaitest.ToolCall{ID: id, Name: "message", Arguments: string(b)}
	}
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		switch n {
		case 0:
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{
				call("c1", map[string]any{"action": "react", "emoji": "🔥", "messageId": alpha}),
				call("c2", map[string]any{"action": "react", "emoji": "🔥", "messageId": inThread}),
				call("c3", map[string]any{"action": "reply", "messageId": alpha, "text": "alpha indeed"}),
			}}
		case 1:
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{call("c4", map[string]any{"action": "delete"})}}
		}
		return openaitest.Reply{Text: "ok"}
	})
	dc.SendMessageCreate(&discordgo.Message{ChannelID: "900", GuildID: "50", Author: carol,
		Content: "<@" + dc.BotUser().ID + "> thoughts?", Mentions: []*discordgo.User{dc.BotUser()}})
	if got := lastUser(waitModel(t, model, 1)); !strings.Contains(got, "carol [message_id: "+alpha+"]: alpha") {
		t.Errorf("model input lacks alpha's id:\n%s", got)
	}
	if _, err := dc.WaitSent(ctx, 2); err != nil { // the tool's reply, the answer
		t.Fatal(err)
	}
	r.drained()
	if re := dc.Reactions(); len(re) != 1 || re[0].ChannelID != "900" || re[0].MessageID != alpha {
		t.Errorf("reactions = %+v, want one on alpha in 900", re)
	}
	sent := dc.Sent()
	if len(sent) != 2 || sent[0].Content != "alpha indeed" || sent[0].Reference == nil || sent[0].Reference.MessageID != alpha {
		t.Fatalf("posts = %+v, want the reply to alpha then the answer", sent)
	}
	if d := dc.Deletions(); len(d) != 1 || d[0].MessageID != sent[0].MessageID {
		t.Errorf("deletions = %+v, want the tool's reply", d)
	}
	var results []string
	for _, m := range model.Requests()[1].Body.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 3 || !strings.Contains(results[1], "not one seen in this chat") {
		t.Errorf("tool results = %q, want the thread's message refused", results)
	}
}
