package gatewayd

import (
	"slices"
	"testing"

	"github.com/gateway/gateway/configs"
)

// TestConfigNames: the keys that name a chat by its id, which a group
// upgraded to a supergroup leaves stale, are each found.
func TestConfigNames(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte(`
agents: {list: [{id: main}, {id: ops}]}
bindings:
  - {agentId: ops, match: {channel: telegram, peer: {kind: group, id: "-100"}}}
  - {agentId: ops, match: {channel: discord, peer: {kind: channel, id: "-100"}}}
  - {agentId: ops, match: {channel: telegram, accountId: other, peer: {kind: group, id: "-100"}}}
channels: {telegram: {accounts: {default: {token: "1:a", groups: {"-100": {agentId: ops}, "-200": {}}}}}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := configNames(cfg)
	want := []string{"bindings[0].match.peer.id", "channels.telegram.accounts.default.groups.-100"}
	if got := names("telegram", "default", "-100"); !slices.Equal(got, want) {
		t.Errorf("configNames(-100) = %q, want %q", got, want)
	}
	if got := names("telegram", "default", "-300"); len(got) != 0 {
		t.Errorf("configNames(-300) = %q, want none", got)
	}
}
