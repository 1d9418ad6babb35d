package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestSlashReplyResumedFromOutbox: a command reply left in the outbox by a
// crash is finished after the restart through the same interaction (its
// remaining parts as ephemeral followups, never twice); one whose token
// has expired meanwhile goes to the channel instead.
func TestSlashReplyResumedFromOutbox(t *testing.T) {
	h := newHarness(t, "", nil)
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true, Guilds: []*discordgo.Guild{
		{ID: slashGuild, Channels: []*discordgo.Channel{{ID: slashChannel, Type: discordgo.ChannelTypeGuildText}}}}})
	t.Cleanup(fake.Close)
	startDiscord(t, h, fake)

	// The daemon that died had acknowledged the interaction.
	i := fake.SlashCommand(slashChannel, owner, "history", nil)
	id := fake.SendInteraction(i)
	s, err := discordgo.New("Bot tok")
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}}); err != nil {
		t.Fatal(err)
	}
	cmd := func(ix *channels.Interaction) channels.Inbound {
		return channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: slashChannel}, MessageID: ix.ID,
			ChatType: channels.Channel, GuildID: slashGuild, SenderID: owner.ID, SenderName: "owner", CaseSensitive: true,
			Mentioned: true, Text: "/history", Time: time.Now(), Interaction: ix}
	}
	live := &channels.Interaction{ID: id, AppID: i.AppID, Token: i.Token, Private: true, Expires: time.Now().Add(10 * time.Minute)}
	expired := &channels.Interaction{ID: "77", AppID: i.AppID, Token: "gone", Private: true, Expires: time.Now().Add(-time.Minute)}

	long := strings.Repeat("a line of history\n", 300) // three parts
	chunks := h.d.adapter("discord", "default").(channels.Chunker).Chunks(channels.Outbound{Text: long})
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	storeReply(t, h, acceptOnly(t, h, cmd(live)), chunks, 1) // part 1 delivered before the crash
	storeReply(t, h, acceptOnly(t, h, cmd(expired)), []string{"late answer"}, 0)

	h.restart()
	startDiscord(t, h, fake)
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	reps := fake.InteractionReplies()
	if len(reps) != 3 {
		t.Fatalf("interaction replies %+v, want the deferral and two followups", reps)
	}
	for k, r := range reps[1:] {
		if r.Kind != discordtest.ReplyFollowup || r.InteractionID != id || r.Flags != discordgo.MessageFlagsEphemeral ||
			r.Content != chunks[k+1] {
			t.Errorf("resumed part %d: %+v", k+2, r)
		}
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Content != "late answer" || sent[0].ChannelID != slashChannel || sent[0].Reference != nil {
		t.Errorf("channel messages %+v, want the expired interaction's answer", sent)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls, want 0", n)
	}
}
