package dispatch

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
)

// TestPlatformAdminsMayResetGroups: in a Telegram group that admits
// everyone, a chat administrator's /reset starts a new session when
// commands.platformAdmins is on and is refused when it is off; a plain
// member is refused either way. Telegram is asked once per sender (the
// answer is remembered), only for privileged commands, and never with the
// setting off.
func TestPlatformAdminsMayResetGroups(t *testing.T) {
	for _, tt := range []struct {
		name string
		on   bool
	}{{"on", true}, {"off", false}} {
		t.Run(tt.name, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			tg.SetChatMember(tgGroup, alice, telegramtest.StatusAdministrator)
			model := openaitest.NewServer(t)
			r := newRoomRig(t, &roomRig{model: model, tg: tg, room: channels.DefaultRoom("telegram"), platformAdmins: tt.on,
				access: map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
			ctx := rigCtx(t)
			bot := "@" + tg.BotUserName() + " "
			sent := 0
			// send posts a group message and returns what the bot answered.
			send := func(from int64, name, text string) string {
				t.Helper()
				say(tg, from, name, text)
				sent++
				got, err := tg.WaitSent(ctx, sent)
				if err != nil {
					t.Fatalf("no answer to %q: %v", text, err)
				}
				return got[sent-1].Text
			}
			session := func() string {
				t.Helper()
				st, err := r.mgr.Store("main")
				if err != nil {
					t.Fatal(err)
				}
				k, err := routing.Parse(tgKey)
				if err != nil {
					t.Fatal(err)
				}
				e, _, err := st.Get(k)
				if err != nil {
					t.Fatal(err)
				}
				return e.SessionID
			}
			const refused = "Only allowed members can use /reset here."

			send(bob, "Bob", bot+"hello")
			first := session()
			if got := send(bob, "Bob", "/reset"); !strings.Contains(got, refused) {
				t.Errorf("a member's /reset answered %q, want the refusal", got)
			}
			got := send(alice, "Alice", "/reset")
			switch {
			case tt.on && !strings.Contains(got, "Started a new session."):
				t.Errorf("the administrator's /reset answered %q, want a new session", got)
			case !tt.on && !strings.Contains(got, refused):
				t.Errorf("the administrator's /reset answered %q with platformAdmins off, want the refusal", got)
			}
			if again := send(bob, "Bob", "/reset"); !strings.Contains(again, refused) {
				t.Errorf("a member's second /reset answered %q, want the refusal", again)
			}
			send(alice, "Alice", bot+"and now?")
			if changed := session() != first; changed != tt.on {
				t.Errorf("session changed: %v, want %v", changed, tt.on)
			}
			want := []telegramtest.MemberLookup{{ChatID: tgGroup, UserID: bob}, {ChatID: tgGroup, UserID: alice}}
			if !tt.on {
				want = nil
			}
			if got := tg.MemberLookups(); len(got) != len(want) || (len(want) > 0 && (got[0] != want[0] || got[1] != want[1])) {
				t.Errorf("getChatMember calls %+v, want %+v (one per sender, privileged commands only)", got, want)
			}
		})
	}
}

// TestPlatformAdminLookupFailureRefuses: when Telegram cannot tell, the
// administrator's /reset is refused like a member's; the failure is not
// remembered, so the next one works.
func TestPlatformAdminLookupFailureRefuses(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	tg.SetChatMember(tgGroup, alice, telegramtest.StatusCreator)
	tg.FailNext("getChatMember", telegramtest.Failure{Code: 400, Description: "Bad Request: chat not found"})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, tg: tg, room: channels.DefaultRoom("telegram"), platformAdmins: true,
		access: map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	say(tg, alice, "Alice", "/new")
	got, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[0].Text, "Only allowed members can use /new here.") {
		t.Errorf("/new with the lookup failing answered %q, want the refusal", got[0].Text)
	}
	say(tg, alice, "Alice", "/new")
	if got, err = tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[1].Text, "Started a new session.") {
		t.Errorf("/new once Telegram answers: %q, want a new session", got[1].Text)
	}
}

// TestPlatformAdminsDiscord: in a Discord channel a member whose role may
// manage the channel starts a new session with /reset; a member without
// it is refused.
func TestPlatformAdminsDiscord(t *testing.T) {
	const guild, channel, roleMods = "50", "900", "70"
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true, Guilds: []*discordgo.Guild{{
		ID: guild, OwnerID: "1",
		Roles: []*discordgo.Role{{ID: guild, Permissions: discordgo.PermissionViewChannel | discordgo.PermissionSendMessages},
			{ID: roleMods, Permissions: discordgo.PermissionManageChannels}},
		Channels: []*discordgo.Channel{{ID: channel, Type: discordgo.ChannelTypeGuildText}},
	}}})
	t.Cleanup(dc.Close)
	mod := &discordgo.User{ID: "7", Username: "mod"}
	carol := &discordgo.User{ID: "8", Username: "carol"}
	dc.SetMember(guild, &discordgo.Member{User: mod, Roles: []string{roleMods}})
	dc.SetMember(guild, &discordgo.Member{User: carol})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, dc: dc, room: channels.DefaultRoom("discord"), platformAdmins: true,
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	bot := dc.BotUser()
	for i, tt := range []struct {
		user *discordgo.User
		want string
	}{
		{carol, "Only allowed members can use /reset here."},
		{mod, "Started a new session."},
	} {
		dc.SendMessageCreate(&discordgo.Message{ChannelID: channel, GuildID: guild, Author: tt.user,
			Content: "<@" + bot.ID + "> /reset", Mentions: []*discordgo.User{bot}})
		got, err := dc.WaitSent(ctx, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got[i].Content, tt.want) {
			t.Errorf("%s's /reset answered %q, want %q", tt.user.Username, got[i].Content, tt.want)
		}
	}
}
