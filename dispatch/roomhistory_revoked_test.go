package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestRoomHistoryOfRevokedSenderNeverReachesTheAgent: Bob's unmentioned
// group messages are kept for the next turn; a reload then takes Bob off
// the group's allowFrom. When Alice next addresses the bot, what Bob said
// is a message from a sender the policy in force refuses: it is not in
// the model's request (it is cut from the history with the rest).
func TestRoomHistoryOfRevokedSenderNeverReachesTheAgent(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram")})
	ctx := rigCtx(t)
	say(tg, alice, "Alice", "alice note")
	last := say(tg, bob, "Bob", "bob's kept note")
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	if n := r.mgr.History().Len(tgKey); n != 2 {
		t.Fatalf("%d messages kept, want 2", n)
	}
	// The reload: the group admits Alice only.
	policy, err := access.New(map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {
		GroupPolicy: access.GroupAllowlist,
		Groups:      map[string]access.GroupRule{"-100500": {AllowFrom: []string{"111"}}},
	}}, access.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt := *r.d.Runtime()
	rt.Access = policyVerdict(policy)
	rt.Admits = func(in channels.Inbound) (bool, string) { d := policy.Admits(in); return d.Allowed(), d.Reason }
	r.d.SetRuntime(&rt)

	say(tg, alice, "Alice", "@"+tg.BotUserName()+" what was said?")
	got := lastUser(waitModel(t, model, 1))
	if !strings.Contains(got, "alice note") {
		t.Errorf("Alice's kept note is missing from the request:\n%s", got)
	}
	if strings.Contains(got, "bob's kept note") {
		t.Errorf("a kept message of a sender the policy in force refuses reached the model:\n%s", got)
	}
	r.drained()
	if n := r.mgr.History().Len(tgKey); n != 0 {
		t.Errorf("%d messages still kept after the turn, want 0", n)
	}
}
