package configs

import (
	"slices"
	"testing"
)

func TestAgentRefs(t *testing.T) {
	c, err := LoadBytes([]byte(`stateDir: /tmp/x
agents: {list: [{id: main}, {id: sales}, {id: ops}]}
bindings: [{agentId: sales, match: {channel: telegram, peer: {kind: direct, id: "1"}}}]
channels:
  telegram:
    accounts:
      default: {token: t, groups: {"-100": {agentId: ops, topics: {"7": {agentId: sales}}}}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []AgentRef{
		{"agents.list[0].id (the default agent)", "main"},
		{"bindings[0].agentId", "sales"},
		{"channels.telegram.accounts.default.groups.-100.agentId", "ops"},
		{"channels.telegram.accounts.default.groups.-100.topics.7.agentId", "sales"},
	}
	if got := c.AgentRefs(); !slices.Equal(got, want) {
		t.Fatalf("AgentRefs = %v\nwant %v", got, want)
	}
}
