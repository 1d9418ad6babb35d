package openclaw

import (
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestTelegramTarget: the forms OpenClaw writes a Telegram target in
// read into the room the gateway addresses (a negative id a group, with a
// thread a forum topic; a positive one a private chat, its thread not a
// topic), and a @username is refused; the room's key follows dmScope.
func TestTelegramTarget(t *testing.T) {
	cases := []struct {
		to, thread string
		want       sessions.JobTarget
		key        string // under per-channel-peer
	}{
		{"-1001", "", sessions.JobTarget{ChatID: "-1001", ChatType: "group"}, "agent:main:telegram:group:-1001"},
		{"telegram:-1001", "7", sessions.JobTarget{ChatID: "-1001", ChatType: "group", ThreadID: "7", IsTopic: true}, "agent:main:telegram:group:-1001:topic:7"},
		{"telegram:group:-1001:topic:7", "", sessions.JobTarget{ChatID: "-1001", ChatType: "group", ThreadID: "7", IsTopic: true}, "agent:main:telegram:group:-1001:topic:7"},
		{"tg:-1001:9", "", sessions.JobTarget{ChatID: "-1001", ChatType: "group", ThreadID: "9", IsTopic: true}, "agent:main:telegram:group:-1001:topic:9"},
		{"TELEGRAM:555", "", sessions.JobTarget{ChatID: "555", ChatType: "direct"}, "agent:main:telegram:direct:555"},
		{"555", "3", sessions.JobTarget{ChatID: "555", ChatType: "direct", ThreadID: "3"}, "agent:main:telegram:direct:555:thread:3"},
		{"@somechannel", "", sessions.JobTarget{}, ""},
		{"group:-1001", "", sessions.JobTarget{}, ""}, // group: is only OpenClaw's after telegram:
	}
	for _, c := range cases {
		got, sk := telegramTarget(c.to, c.thread)
		if c.key == "" {
			if sk == nil {
				t.Errorf("%q: read as %+v, want refused", c.to, got)
			}
			continue
		}
		c.want.Channel = "telegram"
		if sk != nil || got != c.want {
			t.Errorf("%q thread %q: %+v (%v), want %+v", c.to, c.thread, got, sk, c.want)
			continue
		}
		got.AccountID = "default"
		if key, err := roomKey("main", got, routing.Config{}); err != nil || key != c.key {
			t.Errorf("%q: key %q (%v), want %q", c.to, key, err, c.key)
		}
	}
}
