package telegram_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestIsAdminAsksGetChatMember: a chat's creator and administrators
// administer it, a member does not; each (chat, user) costs one
// getChatMember for a minute, however often it is asked.
func TestIsAdminAsksGetChatMember(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	const carol = int64(333)
	srv.SetChatMember(group, alice, telegramtest.StatusAdministrator)
	srv.SetChatMember(group, carol, telegramtest.StatusCreator)
	srv.SetChatMember(forum, alice, telegramtest.StatusMember)
	ctx := testCtx(t)
	in := func(chat, from int64) channels.Inbound {
		return channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(chat))}, ChatType: channels.Group,
			SenderID: id(int(from))}
	}
	tests := []struct {
		name string
		in   channels.Inbound
		want bool
	}{
		{"administrator", in(group, alice), true},
		{"creator", in(group, carol), true},
		{"member by default", in(group, bob), false},
		{"member in another chat", in(forum, alice), false},
		{"administrator, cached", in(group, alice), true},
		{"member, cached", in(group, bob), false},
	}
	for _, tt := range tests {
		got, err := a.IsAdmin(ctx, tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: IsAdmin = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	want := []telegramtest.MemberLookup{{ChatID: group, UserID: alice}, {ChatID: group, UserID: carol},
		{ChatID: group, UserID: bob}, {ChatID: forum, UserID: alice}}
	if diff := cmp.Diff(want, srv.MemberLookups()); diff != "" {
		t.Errorf("getChatMember calls (-want +got):\n%s", diff)
	}
}

// TestIsAdminWithoutRequest: DMs, messages the group sent as itself (an
// anonymous administrator) and messages on behalf of another chat are
// decided without asking Telegram.
func TestIsAdminWithoutRequest(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	srv.SetChatMember(alice, alice, telegramtest.StatusCreator)
	ctx := testCtx(t)
	for _, tt := range []struct {
		name string
		in   channels.Inbound
		want bool
	}{
		{"dm", channels.Inbound{Address: channels.Address{ChatID: id(int(alice))}, ChatType: channels.Direct, SenderID: id(int(alice))}, false},
		{"anonymous administrator", channels.Inbound{Address: channels.Address{ChatID: id(int(group))}, ChatType: channels.Group, SenderID: id(int(group))}, true},
		{"linked channel", channels.Inbound{Address: channels.Address{ChatID: id(int(group))}, ChatType: channels.Group, SenderID: "-100999"}, false},
		{"no sender", channels.Inbound{Address: channels.Address{ChatID: id(int(group))}, ChatType: channels.Group}, false},
	} {
		if got, err := a.IsAdmin(ctx, tt.in); err != nil || got != tt.want {
			t.Errorf("%s: IsAdmin = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if n := srv.Calls("getChatMember"); n != 0 {
		t.Errorf("%d getChatMember calls, want none", n)
	}
}

// TestIsAdminErrors: an answer Telegram refuses is an error and is not
// cached; a migrated group is asked under its new id.
func TestIsAdminErrors(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	in := channels.Inbound{Address: channels.Address{ChatID: id(int(group))}, ChatType: channels.Group, SenderID: id(int(alice))}
	srv.FailNext("getChatMember", telegramtest.Failure{Code: 400, Description: "Bad Request: user not found"})
	if got, err := a.IsAdmin(ctx, in); err == nil || got {
		t.Fatalf("IsAdmin = %v, %v; want an error", got, err)
	}
	srv.SetChatMember(group, alice, telegramtest.StatusAdministrator)
	if got, err := a.IsAdmin(ctx, in); err != nil || !got {
		t.Fatalf("IsAdmin after the failure = %v, %v; want true (the error was not cached)", got, err)
	}

	const oldID, newID = int64(-4003), int64(-1004003)
	srv.Migrate(oldID, newID)
	srv.SetChatMember(newID, alice, telegramtest.StatusCreator)
	old := channels.Inbound{Address: channels.Address{ChatID: id(int(oldID))}, ChatType: channels.Group, SenderID: id(int(alice))}
	if got, err := a.IsAdmin(ctx, old); err != nil || !got {
		t.Fatalf("IsAdmin in a migrated group = %v, %v; want true", got, err)
	}
	lookups := srv.MemberLookups()
	if last := lookups[len(lookups)-1]; last.ChatID != newID {
		t.Errorf("last getChatMember in chat %d, want the supergroup %d", last.ChatID, newID)
	}
}
