package openclaw

import (
	"encoding/json"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestMapEntryLastRoute: an imported entry's last route and delivery
// context hold the chat as the gateway's adapters name it (Telegram's
// chat id, Discord's channel id) with the topic or thread apart, from
// every form OpenClaw writes a target in; a target with no faithful form
// (a Discord user, a @username, "discord:<id>") is kept and counted once
// per entry; a target in the gateway's form already is left as it is;
// and mapping the mapped entry again changes nothing.
func TestMapEntryLastRoute(t *testing.T) {
	nested := func(channel, to string, thread any) string {
		ctx := map[string]any{"channel": channel, "to": to, "accountId": "default"}
		if thread != nil {
			ctx["threadId"] = thread
		}
		b, err := json.Marshal(map[string]any{"delivery": map[string]any{"context": ctx,
			"origin": map[string]any{"provider": channel, "to": to, "accountId": "default"}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name, key string
		in        sessions.Entry
		to        string // LastTo and DeliveryContext.To
		thread    string // LastThreadID and DeliveryContext.ThreadID
		unmapped  string // the report's field, "" for none
	}{
		{"telegram dm", "agent:main:telegram:direct:555", sessions.Entry{Extra: nested("telegram", "telegram:555", nil)}, "555", "", ""},
		{"telegram group", "agent:main:telegram:group:-1001234", sessions.Entry{Extra: nested("telegram", "telegram:-1001234", nil)}, "-1001234", "", ""},
		{"telegram group: form", "agent:main:telegram:group:-1001:topic:7", sessions.Entry{Extra: nested("telegram", "telegram:group:-1001:topic:7", nil)}, "-1001", "7", ""},
		{"tg topic number thread", "agent:main:telegram:group:-1001:topic:7", sessions.Entry{Extra: nested("telegram", "tg:-1001", 7)}, "-1001", "7", ""},
		{"chat:topic:N", "agent:main:telegram:group:-1001:topic:9", sessions.Entry{Extra: nested("telegram", "-1001:topic:9", nil)}, "-1001", "9", ""},
		{"thread wins", "agent:main:telegram:group:-1001:topic:7", sessions.Entry{Extra: nested("telegram", "telegram:-1001:topic:9", "7")}, "-1001", "7", ""},
		{"no channel, prefixed", "agent:main:telegram:direct:555", sessions.Entry{Extra: nested("", "telegram:555", nil)}, "555", "", ""},
		{"gateway form", "agent:main:telegram:group:-1001:topic:7", sessions.Entry{LastChannel: "telegram", LastTo: "-1001", LastThreadID: "7",
			DeliveryContext: sessions.DeliveryContext{Channel: "telegram", To: "-1001", ThreadID: "7"}}, "-1001", "7", ""},
		{"telegram username", "agent:main:telegram:direct:555", sessions.Entry{Extra: nested("telegram", "@someone", nil)}, "@someone", "", "lastRoute.telegram.notAnID"},
		{"discord channel", "agent:ops:discord:channel:999", sessions.Entry{Extra: nested("discord", "channel:999", nil)}, "999", "", ""},
		{"discord prefixed channel", "agent:ops:discord:channel:999", sessions.Entry{Extra: nested("discord", "discord:channel:999", nil)}, "999", "", ""},
		{"discord thread", "agent:ops:discord:channel:100:thread:200", sessions.Entry{Extra: nested("discord", "channel:200", nil)}, "100", "200", ""},
		{"discord user", "agent:ops:discord:direct:777", sessions.Entry{Extra: nested("discord", "user:777", nil)}, "user:777", "", "lastRoute.discord.user"},
		{"discord bare prefixed", "agent:ops:discord:direct:777", sessions.Entry{Extra: nested("discord", "discord:777", nil)}, "discord:777", "", "lastRoute.discord.bareID"},
		{"discord gateway form", "agent:ops:discord:channel:999", sessions.Entry{Extra: nested("discord", "999", nil)}, "999", "", ""},
		{"discord name", "agent:ops:discord:channel:999", sessions.Entry{Extra: nested("discord", "channel:#general", nil)}, "channel:#general", "", "lastRoute.discord.notAnID"},
		{"other channel", "agent:main:slack:channel:c1", sessions.Entry{Extra: nested("slack", "channel:C1", nil)}, "channel:C1", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rep Report
			e := mapEntry(c.key, c.in, &rep)
			dc := e.DeliveryContext
			if e.LastTo != c.to || dc.To != c.to || e.LastThreadID != c.thread || dc.ThreadID != c.thread || e.LastChannel == "" || dc.Channel != e.LastChannel {
				t.Errorf("last route %s %q thread %q, delivery context %+v; want %q thread %q", e.LastChannel, e.LastTo, e.LastThreadID, dc, c.to, c.thread)
			}
			got := map[string]int{}
			for _, u := range rep.List() {
				if u.Field != "entry.delivery" { // the nested member is read, Extra keeps it
					got[u.Field] = u.Count
				}
			}
			want := map[string]int{}
			if c.unmapped != "" {
				want[c.unmapped] = 1
			}
			if len(got) != len(want) || got[c.unmapped] != want[c.unmapped] {
				t.Errorf("report %v, want %v", got, want)
			}
			if again := mapEntry(c.key, e, &Report{}); again != e {
				t.Errorf("mapped twice: %+v\nonce: %+v", again, e)
			}
		})
	}
}

// TestLastRoomBothForms: a job announcing to its session's last route
// finds the same room whether the session's entry keeps the chat in the
// gateway's form (this importer's) or OpenClaw's (an older import's).
func TestLastRoomBothForms(t *testing.T) {
	key := "agent:main:telegram:group:-1001:topic:7"
	o := JobOptions{Routing: routing.Config{}, Serves: func(string, string) bool { return true }}
	var j cronJob
	j.SessionKey, j.SessionTarget = key, "main"
	j.Payload.Kind = "systemEvent"
	want := sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-1001", ChatType: "group", ThreadID: "7", IsTopic: true}
	for _, to := range []string{"-1001", "telegram:-1001", "telegram:-1001:topic:7"} {
		e := sessions.Entry{SessionKey: key, LastChannel: "telegram", LastTo: to, LastThreadID: "7"}
		p := &Plan{Agents: []*AgentPlan{{ID: "main", Keys: []sessions.KeyCopy{{KeyState: sessions.KeyState{Key: key, Entry: &e}}}}}}
		got, room, sk := lastRoom(p, j, "main", o)
		if sk != nil || got != want || room != key {
			t.Errorf("LastTo %q: room %+v in %q (%v), want %+v in %q", to, got, room, sk, want, key)
		}
	}
}

// TestGatewayFrom: OpenClaw's origin sender becomes the bare id the
// gateway keys senders on; a group's chat written there names no sender
// and is left out (counted), an id already bare is kept.
func TestGatewayFrom(t *testing.T) {
	for _, c := range []struct{ from, want string }{
		{"telegram:555", "555"}, {"tg:555", "555"}, {"discord:user:42", "42"}, {"discord:42", "42"},
		{"555", "555"}, {"", ""},
		{"telegram:group:-1002001", ""}, {"telegram:group:-1003001:topic:42", ""}, {"telegram:-1001", ""},
		{"telegram:@ann", ""},
	} {
		rep := &Report{}
		if got := gatewayFrom(c.from, rep); got != c.want {
			t.Errorf("gatewayFrom(%q) = %q, want %q", c.from, got, c.want)
		}
		if counted := len(rep.List()) > 0; counted != (c.want == "" && c.from != "") {
			t.Errorf("gatewayFrom(%q): report %+v", c.from, rep.List())
		}
	}
}
