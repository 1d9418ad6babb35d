package discord

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// The admin fixture: guild 500 owned by user 1, channel 600, thread 700
// below it, and channel 601 whose overwrites take Manage Channels from the
// moderators role and from member 3.
const (
	modsChannel  = "601"
	roleAdmin    = "801" // Administrator
	roleChannels = "802" // Manage Channels
	roleServer   = "803" // Manage Server
	roleMods     = "804" // Manage Channels, denied in channel 601
)

const everyone = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages

func adminOptions() discordtest.Options {
	fo := fakeOptions()
	g := fo.Guilds[0]
	g.OwnerID = "1"
	g.Roles = []*discordgo.Role{
		{ID: guildID, Name: "@everyone", Permissions: everyone},
		{ID: roleAdmin, Name: "admin", Permissions: discordgo.PermissionAdministrator},
		{ID: roleChannels, Name: "channels", Permissions: discordgo.PermissionManageChannels},
		{ID: roleServer, Name: "server", Permissions: discordgo.PermissionManageGuild},
		{ID: roleMods, Name: "mods", Permissions: discordgo.PermissionManageChannels},
	}
	g.Channels = append(g.Channels, &discordgo.Channel{ID: modsChannel, Name: "mods", Type: discordgo.ChannelTypeGuildText,
		PermissionOverwrites: []*discordgo.PermissionOverwrite{
			{ID: roleMods, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionManageChannels},
			{ID: "3", Type: discordgo.PermissionOverwriteTypeMember, Deny: discordgo.PermissionManageChannels},
		}})
	fo.NoEcho = true
	return fo
}

// adminMembers makes the fixture's members known to the fake.
func adminMembers(fake *discordtest.Server) {
	for id, roles := range map[string][]string{
		"1": nil, "2": {roleAdmin}, "3": {roleChannels}, "4": {roleServer}, "5": nil, "6": {roleMods},
	} {
		fake.SetMember(guildID, &discordgo.Member{User: &discordgo.User{ID: id, Username: "u" + id}, Roles: roles})
	}
}

// waitGuildState waits until GUILD_CREATE filled the state: READY leaves
// an unavailable stub before it.
func waitGuildState(t *testing.T, a *Adapter) {
	t.Helper()
	ctx := ctxT(t)
	for {
		if g, err := a.s.State.Guild(guildID); err == nil {
			a.s.State.RLock()
			n := len(g.Roles)
			a.s.State.RUnlock()
			if n > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("guild never reached the state")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func guildMsg(chat, sender string) channels.Inbound {
	return channels.Inbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: chat}, ChatType: channels.Channel, GuildID: guildID,
		SenderID: sender}
}

// TestIsAdminPermissions: the guild's owner and members whose roles give
// Administrator, Manage Server or Manage Channels in the channel (a
// thread's parent) administer it; a plain member does not, nor one whose
// permission a channel overwrite (role or member) denies. Computed from
// the gateway's state (connected) and from REST (not connected, the
// guild in the state an unavailable stub).
func TestIsAdminPermissions(t *testing.T) {
	thread := guildMsg(channelID, "5")
	thread.ThreadID, thread.ParentChatID = threadID, channelID
	threadMod := thread
	threadMod.SenderID = "3"
	tests := []struct {
		name string
		in   channels.Inbound
		want bool
	}{
		{"owner", guildMsg(channelID, "1"), true},
		{"administrator role", guildMsg(channelID, "2"), true},
		{"manage channels role", guildMsg(channelID, "3"), true},
		{"manage server role", guildMsg(channelID, "4"), true},
		{"plain member", guildMsg(channelID, "5"), false},
		{"role allowed here", guildMsg(channelID, "6"), true},
		{"role overwrite denies", guildMsg(modsChannel, "6"), false},
		{"member overwrite denies", guildMsg(modsChannel, "3"), false},
		{"administrator ignores overwrites", guildMsg(modsChannel, "2"), true},
		{"owner ignores overwrites", guildMsg(modsChannel, "1"), true},
		{"thread: plain member", thread, false},
		{"thread: parent's permissions", threadMod, true},
		{"dm", channels.Inbound{Address: channels.Address{Channel: Name, ChatID: dmID}, ChatType: channels.Direct, SenderID: "1"}, false},
	}
	check := func(t *testing.T, a *Adapter) {
		for _, tt := range tests {
			got, err := a.IsAdmin(ctxT(t), tt.in)
			if err != nil || got != tt.want {
				t.Errorf("%s: IsAdmin = %v, %v; want %v", tt.name, got, err, tt.want)
			}
		}
	}
	t.Run("state", func(t *testing.T) {
		h := start(t, Config{}, adminOptions())
		adminMembers(h.fake)
		waitGuildState(t, h.a)
		check(t, h.a)
		if n := h.fake.GuildLookups(); n != 0 {
			t.Errorf("%d guild requests, want none (GUILD_CREATE filled the state)", n)
		}
	})
	t.Run("rest", func(t *testing.T) {
		fake := discordtest.New(adminOptions())
		t.Cleanup(fake.Close)
		adminMembers(fake)
		a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		// What READY leaves until GUILD_CREATE: a stub without owner or roles.
		if err := a.s.State.GuildAdd(&discordgo.Guild{ID: guildID, Unavailable: true}); err != nil {
			t.Fatal(err)
		}
		check(t, a)
		if fake.GuildLookups() == 0 || fake.MemberLookups() == 0 {
			t.Errorf("guild and member requests %d, %d: want REST used", fake.GuildLookups(), fake.MemberLookups())
		}
	})
}

// TestIsAdminCachesAndFails: a second question within a minute makes no
// request; a member Discord does not know is an error, not cached.
func TestIsAdminCachesAndFails(t *testing.T) {
	h := start(t, Config{}, adminOptions())
	adminMembers(h.fake)
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		if got, err := h.a.IsAdmin(ctx, guildMsg(channelID, "3")); err != nil || !got {
			t.Fatalf("IsAdmin #%d = %v, %v; want true", i+1, got, err)
		}
	}
	if n := h.fake.MemberLookups(); n != 1 {
		t.Errorf("%d member requests for two questions, want 1", n)
	}
	stranger := guildMsg(channelID, "99")
	if got, err := h.a.IsAdmin(ctx, stranger); err == nil || got {
		t.Fatalf("IsAdmin for an unknown member = %v, %v; want an error", got, err)
	}
	h.fake.SetMember(guildID, &discordgo.Member{User: &discordgo.User{ID: "99"}, Roles: []string{roleAdmin}})
	if got, err := h.a.IsAdmin(ctx, stranger); err != nil || !got {
		t.Errorf("IsAdmin once the member exists = %v, %v; want true (the error was not cached)", got, err)
	}
}

// TestIsAdminFromSlashCommand: a slash command's member permissions
// answer IsAdmin for its Inbound without a request.
func TestIsAdminFromSlashCommand(t *testing.T) {
	h := start(t, Config{}, adminOptions())
	adminMembers(h.fake)
	ctx := ctxT(t)
	for _, tt := range []struct {
		user string
		want bool
	}{{"3", true}, {"5", false}} {
		h.fake.SendInteraction(h.fake.SlashCommand(channelID, &discordgo.User{ID: tt.user, Username: "u" + tt.user}, "status", nil))
		in := h.next(t)
		if in.Interaction == nil || in.SenderID != tt.user {
			t.Fatalf("inbound %+v, want user %s's slash command", in, tt.user)
		}
		if got, err := h.a.IsAdmin(ctx, in); err != nil || got != tt.want {
			t.Errorf("user %s: IsAdmin = %v, %v; want %v", tt.user, got, err, tt.want)
		}
	}
	if n := h.fake.MemberLookups(); n != 0 {
		t.Errorf("%d member requests, want none (the interaction said)", n)
	}
}
