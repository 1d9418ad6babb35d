package dispatch

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

const tgGroupKey = "agent:main:telegram:group:-100500"

// delivered waits until the dispatcher saw a reply chunk delivered on
// Telegram: the adapter has then recorded the message as the bot's (its
// SentLog), which the fake's record of the send does not promise.
func (r *roomRig) delivered() {
	r.t.Helper()
	k := channels.AccountKey{Channel: "telegram", AccountID: "default"}
	eventually(r.t, "reply delivered", func() bool { return !r.d.Status(0).Traffic[k].LastOutbound.IsZero() })
}

// mention is text addressed to the fake Telegram bot.
func mention(tg *telegramtest.Server, text string) string { return "@" + tg.BotUserName() + " " + text }

// TestReactionReachesAgentAsEventWithoutTurn: in a room that notes
// reactions, a listed member's reaction to the bot's answer is kept for
// the session and starts no turn; the next turn's input carries it; the
// reaction of a sender the group does not list never reaches the agent.
func TestReactionReachesAgentAsEventWithoutTurn(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.Events.Reactions = channels.EventsNote
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room})
	ctx := rigCtx(t)
	say(tg, 222, "bob", mention(tg, "hi"))
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	answer := sent[0].MessageID
	r.delivered()
	refused := tg.UserReaction(tgGroup, "supergroup", answer, 999, "eve", "", "👎")
	heard := tg.UserReaction(tgGroup, "supergroup", answer, 111, "ann", "", "👍")
	for _, u := range []int{refused, heard} {
		if err := tg.WaitConfirmed(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.mgr.History().Len(tgGroupKey); n != 1 {
		t.Fatalf("%d events kept for the session; want 1 (ann's, not eve's)", n)
	}
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("%d model requests after the reactions; want 1: a noted reaction starts no turn", n)
	}
	say(tg, 222, "bob", mention(tg, "did they like it?"))
	got := lastUser(waitModel(t, model, 2))
	want := "(reacted 👍 to your message [message_id: " + strconv.Itoa(answer) + "])"
	if !strings.Contains(got, want) || !inOrder(got, "ann", want, "did they like it?") || strings.Contains(got, "👎") || strings.Contains(got, "eve") {
		t.Errorf("next turn's input:\n%s\nwant ann's reaction %q and nothing of eve's", got, want)
	}
}

// TestReactionsOffByDefault: a room that says nothing hears no reactions.
func TestReactionsOffByDefault(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: channels.DefaultRoom("telegram")})
	ctx := rigCtx(t)
	tg.DM(111, "hi")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.delivered() // so the reaction would be heard if the room heard any
	u := tg.UserReaction(111, "private", sent[0].MessageID, 111, "ann", "", "👍")
	if err := tg.WaitConfirmed(ctx, u); err != nil {
		t.Fatal(err)
	}
	tg.DM(111, "again")
	if got := lastUser(waitModel(t, model, 2)); strings.Contains(got, "reacted") {
		t.Errorf("a reaction reached the agent in a room that hears none:\n%s", got)
	}
	if n := r.mgr.History().Len("agent:main:telegram:direct:111"); n != 0 {
		t.Errorf("%d entries kept for the DM; want none", n)
	}
}

// TestReactionInDMNoted: a DM hears a noted reaction (DMs keep no other
// history); a reaction to a message that is not the bot's is not heard,
// nor is taking a reaction away.
func TestReactionInDMNoted(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.Events.Reactions = channels.EventsNote
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: room})
	ctx := rigCtx(t)
	_, own := tg.AddMessage(telegramtest.Message{ChatID: 111, FromID: 111, Text: "hi"})
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.delivered()
	for _, u := range []int{
		tg.UserReaction(111, "private", own, 111, "ann", "", "🔥"),               // on the user's own message
		tg.UserReaction(111, "private", sent[0].MessageID, 111, "ann", "", "❤"), // heard
		tg.UserReaction(111, "private", sent[0].MessageID, 111, "ann", "❤", ""), // taken away: not heard
	} {
		if err := tg.WaitConfirmed(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	tg.DM(111, "so?")
	got := lastUser(waitModel(t, model, 2))
	if !inOrder(got, historyHeader, "(reacted ❤ to your message", historyFooter, "so?") || strings.Contains(got, "🔥") {
		t.Errorf("DM turn's input:\n%s", got)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests; want 2", n)
	}
}

// TestEditAnsweredAgain: in a room whose edits are answered, editing an
// addressed message runs a turn on the new text. (A redelivery of one edit
// update keeps its stamp and is a duplicate: TestEditsWithinOneSecondAreDistinct
// in channels/telegram. Two updates carrying the same edit are two edits
// since 7686d14, run as one turn or two as the queue has them: this test
// sent such a pair and counted model calls, which failed whenever the
// first had started before the second arrived.)
func TestEditAnsweredAgain(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("telegram")
	room.Events.Edits = channels.EventsAnswer
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgDMAccess(), room: room})
	ctx := rigCtx(t)
	m := telegramtest.Message{ChatID: 111, FromID: 111, Text: "what is 2+2?"}
	_, id := tg.AddMessage(m)
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m.Text = "what is 2+3?"
	edit := tg.MessageObject(m, id)
	edit["edit_date"] = time.Now().Unix()
	upd := tg.AddUpdate(map[string]any{"edited_message": edit})
	got := lastUser(waitModel(t, model, 2))
	if !strings.Contains(got, "(edited their message [message_id: "+strconv.Itoa(id)+"]; it now reads:)\nwhat is 2+3?") {
		t.Errorf("edit turn's input:\n%s", got)
	}
	if err := tg.WaitConfirmed(ctx, upd); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests; want 2", n)
	}
}

// TestDiscordReactionStartsTurnWhenConfigured: MESSAGE_REACTION_ADD on the
// bot's message, in a room whose reactions are turns, runs a turn as the
// reactor; a reaction to someone else's message is not heard.
func TestDiscordReactionStartsTurnWhenConfigured(t *testing.T) {
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(dc.Close)
	dc.AddChannel(&discordgo.Channel{ID: "900", GuildID: "50", Type: discordgo.ChannelTypeGuildText})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("discord")
	room.Events.Reactions = channels.EventsTurn
	newRoomRig(t, &roomRig{model: model, dc: dc, room: room,
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	bot := dc.BotUser()
	carol := &discordgo.User{ID: "7", Username: "carol"}
	other := dc.SendMessageCreate(&discordgo.Message{ChannelID: "900", GuildID: "50", Author: carol,
		Content: "<@" + bot.ID + "> hello", Mentions: []*discordgo.User{bot}})
	sent, err := dc.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	react := func(msg, author, emoji string) {
		dc.Dispatch("MESSAGE_REACTION_ADD", map[string]any{
			"user_id": carol.ID, "channel_id": "900", "message_id": msg, "guild_id": "50", "message_author_id": author,
			"member": map[string]any{"user": map[string]any{"id": carol.ID, "username": "carol"}, "roles": []string{}},
			"emoji":  map[string]any{"name": emoji},
		})
	}
	react(other, carol.ID, "👀") // carol's own message: not heard
	react(sent[0].MessageID, bot.ID, "🎉")
	got := lastUser(waitModel(t, model, 2))
	if !strings.Contains(got, "(reacted 🎉 to your message [message_id: "+sent[0].MessageID+"])") || !strings.Contains(got, "carol") || strings.Contains(got, "👀") {
		t.Errorf("reaction turn's input:\n%s", got)
	}
	if _, err := dc.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests; want 2", n)
	}
}

// TestDiscordEditNoted: MESSAGE_UPDATE of a message that addressed the bot,
// in a room that notes edits, is kept for the next turn and starts none;
// an update without edited_timestamp (an embed added) is not an edit.
func TestDiscordEditNoted(t *testing.T) {
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(dc.Close)
	dc.AddChannel(&discordgo.Channel{ID: "900", GuildID: "50", Type: discordgo.ChannelTypeGuildText})
	model := openaitest.NewServer(t)
	room := channels.DefaultRoom("discord")
	room.Events.Edits = channels.EventsNote
	r := newRoomRig(t, &roomRig{model: model, dc: dc, room: room,
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	bot := dc.BotUser()
	carol := &discordgo.User{ID: "7", Username: "carol"}
	msg := &discordgo.Message{ChannelID: "900", GuildID: "50", Author: carol,
		Content: "<@" + bot.ID + "> what is 2+2?", Mentions: []*discordgo.User{bot}}
	id := dc.SendMessageCreate(msg)
	if _, err := dc.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	embed := *msg
	embed.ID, embed.Timestamp = id, time.Now()
	dc.Dispatch("MESSAGE_UPDATE", &embed) // no edited_timestamp
	edited := embed
	at := time.Now()
	edited.Content, edited.EditedTimestamp = "<@"+bot.ID+"> what is 2+3?", &at
	dc.Dispatch("MESSAGE_UPDATE", &edited)
	key := "agent:main:discord:channel:900"
	eventually(t, "edit kept", func() bool { return r.mgr.History().Len(key) == 1 })
	dc.SendMessageCreate(&discordgo.Message{ChannelID: "900", GuildID: "50", Author: carol,
		Content: "<@" + bot.ID + "> well?", Mentions: []*discordgo.User{bot}})
	got := lastUser(waitModel(t, model, 2))
	if !inOrder(got, "(edited their message [message_id: "+id+"]; it now reads:)", "what is 2+3?", historyFooter, "well?") ||
		strings.Contains(got, "2+2") {
		t.Errorf("next turn's input (want the edit once, nothing of the embed update):\n%s", got)
	}
	eventually(t, "the turn's entries cut", func() bool { return r.mgr.History().Len(key) == 0 })
}
