package access

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/pairstate"
)

func ptr[T any](v T) *T { return &v }

func dm(sender string) channels.Inbound {
	return channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: "dm-" + sender}, ChatType: channels.Direct, SenderID: sender, Mentioned: true, CaseSensitive: true, Text: "hi"}
}

func group(chat, sender string, mentioned bool) channels.Inbound {
	return channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: chat}, ChatType: channels.Channel, GuildID: "g1", SenderID: sender, Mentioned: mentioned, CaseSensitive: true, Text: "hi"}
}

func thread(parent, thread, sender string) channels.Inbound {
	in := group(parent, sender, true)
	in.ThreadID, in.ParentChatID = thread, parent
	return in
}

func mustPolicy(t *testing.T, cfg Config, store *PairingStore) *Policy {
	t.Helper()
	p, err := New(map[Account]Config{{"discord", "default"}: cfg}, Options{Store: store})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestCheckDM(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		in     channels.Inbound
		want   Outcome
		reason string
	}{
		{"disabled refuses listed sender", Config{DMPolicy: DMDisabled, AllowFrom: []string{"u1"}}, dm("u1"), Deny, ReasonDMDisabled},
		{"open admits anyone", Config{DMPolicy: DMOpen}, dm("u9"), Allow, ""},
		{"allowlist admits listed", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"u1"}}, dm("u1"), Allow, ""},
		{"allowlist admits channel-prefixed entry", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"discord:u1"}}, dm("u1"), Allow, ""},
		{"allowlist admits mention form", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"<@!u1>"}}, dm("u1"), Allow, ""},
		{"allowlist ignores other channel prefix", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"telegram:u1"}}, dm("u1"), Deny, ReasonNotAllowlisted},
		{"allowlist refuses unknown silently", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"u1"}}, dm("u2"), Deny, ReasonNotAllowlisted},
		{"allowlist wildcard", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"*"}}, dm("u2"), Allow, ""},
		{"allowlist is case-sensitive for case-sensitive ids", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"AbC"}}, dm("abc"), Deny, ReasonNotAllowlisted},
		{"pairing admits listed", Config{AllowFrom: []string{"u1"}}, dm("u1"), Allow, ""},
		{"pairing gives unknown a code", Config{}, dm("u2"), Pair, ReasonPairingCode},
		{"empty sender refused", Config{DMPolicy: DMOpen}, dm(""), Deny, ReasonNoSender},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg, newStore(t, newClock()))
			got := p.Check(tt.in)
			if got.Outcome != tt.want || got.Reason != tt.reason {
				t.Fatalf("Check = %v/%q, want %v/%q", got.Outcome, got.Reason, tt.want, tt.reason)
			}
			if got.Outcome == Pair && (len(got.Code) != CodeLength || !strings.Contains(got.Reply, got.Code)) {
				t.Fatalf("pair decision %+v: bad code or reply", got)
			}
			if got.Outcome != Pair && got.Reply != "" {
				t.Fatalf("non-pair decision carries a reply: %+v", got)
			}
		})
	}
}

func TestCheckDMCaseInsensitiveChannel(t *testing.T) {
	p := mustPolicy(t, Config{DMPolicy: DMAllowlist, AllowFrom: []string{"Alice"}}, nil)
	in := dm("alice")
	in.CaseSensitive = false
	if got := p.Check(in); !got.Allowed() {
		t.Fatalf("case-insensitive channel: %+v", got)
	}
}

func TestCheckPairingWithoutStore(t *testing.T) {
	p := mustPolicy(t, Config{}, nil)
	if got := p.Check(dm("u2")); got.Outcome != Deny || got.Reason != ReasonNotAllowlisted {
		t.Fatalf("got %+v", got)
	}
}

func TestCheckGroup(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		in     channels.Inbound
		want   Outcome
		reason string
	}{
		{"disabled", Config{GroupPolicy: GroupDisabled, Groups: map[string]GroupRule{"c1": {}}}, group("c1", "u1", true), Deny, ReasonGroupDisabled},
		{"default allowlist with nothing listed", Config{}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"allowlist: listed channel", Config{Groups: map[string]GroupRule{"c1": {}}}, group("c1", "u1", true), Allow, ""},
		{"allowlist: listed guild covers channel", Config{Groups: map[string]GroupRule{"g1": {}}}, group("c1", "u1", true), Allow, ""},
		{"allowlist: wildcard", Config{Groups: map[string]GroupRule{"*": {}}}, group("c1", "u1", true), Allow, ""},
		{"allowlist: other channel", Config{Groups: map[string]GroupRule{"c2": {}}}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"allowlist: allowFrom does not open unlisted group", Config{AllowFrom: []string{"u1"}}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"allowlist: channel blocked inside listed guild", Config{Groups: map[string]GroupRule{"g1": {}, "c1": {Allow: ptr(false)}}}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"open: any group", Config{GroupPolicy: GroupOpen}, group("c1", "u1", true), Allow, ""},
		{"open: blocked group", Config{GroupPolicy: GroupOpen, Groups: map[string]GroupRule{"c1": {Allow: ptr(false)}}}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"mention required by default", Config{GroupPolicy: GroupOpen}, group("c1", "u1", false), Deny, ReasonNotMentioned},
		{"account turns mention off", Config{GroupPolicy: GroupOpen, RequireMention: ptr(false)}, group("c1", "u1", false), Allow, ""},
		{"rule turns mention off", Config{Groups: map[string]GroupRule{"c1": {RequireMention: ptr(false)}}}, group("c1", "u1", false), Allow, ""},
		{"channel rule overrides guild rule", Config{Groups: map[string]GroupRule{"g1": {RequireMention: ptr(false)}, "c1": {RequireMention: ptr(true)}}}, group("c1", "u1", false), Deny, ReasonNotMentioned},
		{"rule allowFrom admits listed sender", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u1"}}}}, group("c1", "u1", true), Allow, ""},
		{"rule allowFrom refuses others", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u1"}}}}, group("c1", "u2", true), Deny, ReasonSenderNotListed},
		{"guild allowFrom applies to channel", Config{Groups: map[string]GroupRule{"g1": {AllowFrom: []string{"u1"}}}}, group("c1", "u2", true), Deny, ReasonSenderNotListed},
		{"thread inherits parent rule", Config{Groups: map[string]GroupRule{"c1": {}}}, thread("c1", "t1", "u1"), Allow, ""},
		{"thread rule blocks thread", Config{Groups: map[string]GroupRule{"c1": {}, "t1": {Allow: ptr(false)}}}, thread("c1", "t1", "u1"), Deny, ReasonGroupNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg, nil)
			got := p.Check(tt.in)
			if got.Outcome != tt.want || got.Reason != tt.reason {
				t.Fatalf("Check = %v/%q, want %v/%q", got.Outcome, got.Reason, tt.want, tt.reason)
			}
			if tt.in.ChatType != channels.Direct {
				in := tt.in
				in.Mentioned = false
				wantMention := got.Reason == ReasonNotMentioned
				if wantMention && !p.MentionRequired(in) {
					t.Fatalf("MentionRequired = false for a message refused as not mentioned")
				}
				if tt.cfg.MentionRequired(in) != p.MentionRequired(in) {
					t.Fatalf("Config.MentionRequired and Policy.MentionRequired disagree")
				}
			}
		})
	}
}

func TestMentionRequiredDM(t *testing.T) {
	p := mustPolicy(t, Config{}, nil)
	in := dm("u1")
	in.Mentioned = false
	if p.MentionRequired(in) {
		t.Fatal("DMs never require a mention")
	}
}

func TestPrivileged(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		in   channels.Inbound
		want bool
	}{
		{"dm open: anyone", Config{DMPolicy: DMOpen}, dm("u9"), true},
		{"dm allowlist: listed", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"u1"}}, dm("u1"), true},
		{"dm pairing: unknown", Config{}, dm("u9"), false},
		{"dm disabled", Config{DMPolicy: DMDisabled, AllowFrom: []string{"u1"}}, dm("u1"), false},
		{"group open: member not listed", Config{GroupPolicy: GroupOpen}, group("c1", "u9", true), false},
		{"group open: the DM allow list grants nothing", Config{GroupPolicy: GroupOpen, AllowFrom: []string{"u1"}}, group("c1", "u1", true), false},
		{"group: rule allowFrom", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u2"}}}}, group("c1", "u2", true), true},
		{"group: DM wildcard grants nothing", Config{GroupPolicy: GroupOpen, AllowFrom: []string{"*"}}, group("c1", "u7", true), false},
		{"group: rule wildcard", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"*"}}}}, group("c1", "u7", true), true},
		{"group: listed sender in refused group", Config{AllowFrom: []string{"u1"}}, group("c1", "u1", true), false},
		{"group: privileged without mention", Config{GroupPolicy: GroupOpen, Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u1"}}}}, group("c1", "u1", false), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t, newClock())
			p := mustPolicy(t, tt.cfg, store)
			if got := p.Privileged(tt.in); got != tt.want {
				t.Fatalf("Privileged = %v, want %v", got, tt.want)
			}
			if pending, _ := store.List(""); len(pending) != 0 {
				t.Fatalf("Privileged created pairing requests: %v", pending)
			}
		})
	}
}

// TestDMApprovalGrantsNoGroupAuthority: a sender approved for DMs by
// pairing may reset their own DM session, not a group's shared one; a
// commands.owners entry (for this channel or bare) may, in any admitted group.
func TestDMApprovalGrantsNoGroupAuthority(t *testing.T) {
	clk := newClock()
	store := newStore(t, clk)
	p := mustPolicy(t, Config{GroupPolicy: GroupOpen}, store)
	d := p.Check(dm("u5"))
	if _, err := store.Approve("discord", d.Code); err != nil {
		t.Fatal(err)
	}
	if !p.Privileged(dm("u5")) {
		t.Fatal("approved sender is not privileged in their DM")
	}
	if p.Privileged(group("c1", "u5", true)) {
		t.Fatal("DM approval granted authority over a group's session")
	}
	owners, err := New(map[Account]Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: GroupOpen}},
		Options{Store: store, Owners: []string{"discord:u5", "telegram:u6", "u7"}})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"u5": true, "u6": false, "u7": true, "u8": false} {
		if got := owners.Privileged(group("c1", id, true)); got != want {
			t.Errorf("owner check for %s in a discord group: %v, want %v", id, got, want)
		}
	}
}

// TestAskPlatform: with platformAdmins on, a group member who may talk
// but is not privileged is to be asked about; nobody is with it off, in a
// DM, when already privileged, or when not admitted to the group.
func TestAskPlatform(t *testing.T) {
	open := Config{GroupPolicy: GroupOpen, Groups: map[string]GroupRule{
		"c1": {AllowFrom: []string{"u1", "u2"}}, "c2": {Allow: ptr(false)}}}
	tests := []struct {
		name   string
		cfg    Config
		owners []string
		on     bool
		in     channels.Inbound
		want   bool
	}{
		{"member", Config{GroupPolicy: GroupOpen}, nil, true, group("c9", "u9", true), true},
		{"member, unmentioned", Config{GroupPolicy: GroupOpen}, nil, true, group("c9", "u9", false), true},
		{"member in a thread", Config{GroupPolicy: GroupOpen}, nil, true, thread("c9", "t1", "u9"), true},
		{"off", Config{GroupPolicy: GroupOpen}, nil, false, group("c9", "u9", true), false},
		{"dm", Config{DMPolicy: DMOpen}, nil, true, dm("u9"), false},
		{"listed in the group's allowFrom", open, nil, true, group("c1", "u1", true), false},
		{"owner", Config{GroupPolicy: GroupOpen}, []string{"discord:u9"}, true, group("c9", "u9", true), false},
		{"not in the group's allowFrom", open, nil, true, group("c1", "u9", true), false},
		{"blocked group", open, nil, true, group("c2", "u9", true), false},
		{"unlisted group under allowlist", Config{}, nil, true, group("c9", "u9", true), false},
		{"no sender", Config{GroupPolicy: GroupOpen}, nil, true, group("c9", "", true), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(map[Account]Config{{"discord", "default"}: tt.cfg}, Options{Owners: tt.owners, PlatformAdmins: tt.on})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.AskPlatform(tt.in); got != tt.want {
				t.Errorf("AskPlatform = %v, want %v", got, tt.want)
			}
			if tt.want && p.Privileged(tt.in) {
				t.Error("asked about a sender already privileged")
			}
		})
	}
}

func TestUnknownAccountGetsDefaults(t *testing.T) {
	p := mustPolicy(t, Config{DMPolicy: DMOpen}, nil)
	in := dm("u1")
	in.AccountID = "other"
	if got := p.Check(in); got.Allowed() {
		t.Fatalf("unconfigured account admitted a stranger: %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // error prefix, "" for valid
	}{
		{"zero", Config{}, ""},
		{"full", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"1", "discord:2", "*"}, GroupPolicy: GroupOpen,
			Groups: map[string]GroupRule{"1": {Allow: ptr(true), AllowFrom: []string{"3"}}}}, ""},
		{"bad dm policy", Config{DMPolicy: "friends"}, "dmPolicy:"},
		{"bad group policy", Config{GroupPolicy: "pairing"}, "groupPolicy:"},
		{"empty allowFrom entry", Config{AllowFrom: []string{"1", " "}}, "allowFrom[1]:"},
		{"bad rule allowFrom", Config{Groups: map[string]GroupRule{"42": {AllowFrom: []string{"a b"}}}}, "groups.42.allowFrom[0]:"},
		{"guilds key name", Config{GroupsKey: "guilds", Groups: map[string]GroupRule{"7": {AllowFrom: []string{""}}}}, "guilds.7.allowFrom[0]:"},
		{"empty group id", Config{Groups: map[string]GroupRule{" ": {}}}, "groups: empty group id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestNewNamesAccount(t *testing.T) {
	_, err := New(map[Account]Config{{"telegram", "bot2"}: {DMPolicy: "x"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "channels.telegram.accounts.bot2.dmPolicy") {
		t.Fatalf("New error = %v", err)
	}
}

// TestAdmits: the second look at a message accepted earlier follows the
// policy in force, ignores mention gating, and never creates a pairing
// request; a sender-less group message (an ambient tick) is judged by its
// room alone.
func TestAdmits(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		in     channels.Inbound
		want   Outcome
		reason string
	}{
		{"listed DM sender", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"u1"}}, dm("u1"), Allow, ""},
		{"DM sender removed", Config{DMPolicy: DMAllowlist, AllowFrom: []string{"u2"}}, dm("u1"), Deny, ReasonNotAllowlisted},
		{"DMs switched off", Config{DMPolicy: DMDisabled, AllowFrom: []string{"u1"}}, dm("u1"), Deny, ReasonDMDisabled},
		{"unknown DM sender under pairing: no code", Config{}, dm("u9"), Deny, ReasonNotAllowlisted},
		{"group member, mention aside", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u1"}}}}, group("c1", "u1", false), Allow, ""},
		{"group member removed", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u2"}}}}, group("c1", "u1", true), Deny, ReasonSenderNotListed},
		{"group switched off", Config{Groups: map[string]GroupRule{"c1": {Enabled: ptr(false)}}}, group("c1", "u1", true), Deny, ReasonGroupNotAllowed},
		{"groups disabled", Config{GroupPolicy: GroupDisabled, Groups: map[string]GroupRule{"c1": {}}}, group("c1", "u1", true), Deny, ReasonGroupDisabled},
		{"ambient tick in a listed room", Config{Groups: map[string]GroupRule{"c1": {AllowFrom: []string{"u1"}}}}, group("c1", "", false), Allow, ""},
		{"ambient tick in a room no longer listed", Config{Groups: map[string]GroupRule{"c2": {}}}, group("c1", "", false), Deny, ReasonGroupNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t, newClock())
			p := mustPolicy(t, tt.cfg, store)
			got := p.Admits(tt.in)
			if got.Outcome != tt.want || got.Reason != tt.reason || got.Reply != "" {
				t.Fatalf("Admits = %+v, want %v/%q", got, tt.want, tt.reason)
			}
			if reqs, err := store.List("discord"); err != nil || len(reqs) != 0 {
				t.Fatalf("pairing requests after Admits: %v, %v", reqs, err)
			}
		})
	}
}

// brokenState is a pairing state whose reads fail.
type brokenState struct{ pairstate.State }

func (brokenState) LoadPairing(context.Context, string) (pairstate.Data, error) {
	return pairstate.Data{}, errors.New("disk on fire")
}

// TestAdmitsKeepsMessageOnStoreError: a message admitted when it came is
// not dropped because the pairing store cannot be read now.
func TestAdmitsKeepsMessageOnStoreError(t *testing.T) {
	p := mustPolicy(t, Config{}, NewPairingStore(brokenState{}, StoreOptions{}))
	if got := p.Admits(dm("u1")); got.Outcome != Allow {
		t.Fatalf("Admits with a failing store = %+v, want allow", got)
	}
	if got := p.Check(dm("u1")); got.Outcome == Allow {
		t.Fatalf("Check with a failing store = %+v, want a refusal", got)
	}
}
