package gatewayd

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
)

// TestRoomEventKeysLoadAndReload: reactions, edits and mentionByName are
// room keys an account or a group sets, decoded strictly (a bad value names
// its key), reloaded without restart, and resolved into the room.
func TestRoomEventKeysLoadAndReload(t *testing.T) {
	load := func(tg string) (*configs.Config, error) {
		return configs.LoadBytes([]byte(`channels: {telegram: {accounts: {default: {token: "1:a", groupPolicy: open, `+tg+`}}}}`), nil)
	}
	before, err := load(`requireMention: true`)
	if err != nil {
		t.Fatal(err)
	}
	after, err := load(`reactions: note, mentionByName: true, groups: {"-100": {edits: answer, reactions: turn}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := restartOnly(before, after); len(got) != 0 {
		t.Errorf("restartOnly = %v, want none", got)
	}
	p, err := accessPolicy(after, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	room := roomFunc(p)
	addr := channels.Address{Channel: "telegram", AccountID: "default"}
	dm := room(channels.Inbound{Address: addr, ChatType: channels.Direct})
	addr.ChatID = "-100"
	group := room(channels.Inbound{Address: addr, ChatType: channels.Group})
	if dm.Events != (channels.EventsConfig{Reactions: channels.EventsNote}) || !dm.MentionByName {
		t.Errorf("account room: events %+v mentionByName %v", dm.Events, dm.MentionByName)
	}
	if group.Events != (channels.EventsConfig{Reactions: channels.EventsTurn, Edits: channels.EventsAnswer}) {
		t.Errorf("group room: events %+v", group.Events)
	}
	for _, bad := range []string{`reactions: loud`, `edits: turn`} {
		_, err := load(bad)
		key := strings.SplitN(bad, ":", 2)[0]
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %s", bad, err, key)
		}
	}
}
