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

func TestProviderRefs(t *testing.T) {
	c, err := LoadBytes([]byte(`stateDir: /tmp/x
providers: {cheap: {type: echo}, fast: {type: echo}}
channels:
  telegram:
    accounts:
      default: {token: t, ambientModel: cheap/mini, groups: {"-100": {ambient: true, topics: {"7": {ambientModel: fast/x}}}}}
  discord:
    accounts:
      default: {token: d, guilds: {"9": {ambient: true, ambientModel: fast/y}}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProviderRef{
		{"channels.telegram.accounts.default.ambientModel", "cheap"},
		{"channels.telegram.accounts.default.groups.-100.topics.7.ambientModel", "fast"},
		{"channels.discord.accounts.default.guilds.9.ambientModel", "fast"},
	}
	if got := c.ProviderRefs(); !slices.Equal(got, want) {
		t.Fatalf("ProviderRefs = %v\nwant %v", got, want)
	}
}
