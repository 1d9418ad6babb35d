package configs

import (
	"strings"
	"testing"
)

// TestKeepRecentKeys: compaction.keepRecentTurns and keepRecentMessages
// load in agents.defaults and per agent, and a negative one is refused
// with its key named.
func TestKeepRecentKeys(t *testing.T) {
	c, err := LoadBytes([]byte(`
agents:
  defaults:
    compaction: {keepRecentTurns: 20}
  list:
    - id: main
      compaction: {keepRecentMessages: 40}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Agents.Defaults.Compaction; d.KeepRecentTurns != 20 {
		t.Errorf("defaults keepRecentTurns = %d, want 20", d.KeepRecentTurns)
	}
	if a := c.Agents.List[0].Compaction; a.KeepRecentMessages != 40 {
		t.Errorf("agent keepRecentMessages = %d, want 40", a.KeepRecentMessages)
	}
	for yaml, key := range map[string]string{
		"agents: {defaults: {compaction: {keepRecentTurns: -1}}}":            "agents.defaults: compaction.keepRecentTurns -1",
		"agents: {list: [{id: main, compaction: {keepRecentMessages: -3}}]}": "agents.list[0]: agent main: compaction.keepRecentMessages -3",
		"agents: {list: [{id: main, compaction: {keepRecentTokens: -5}}]}":   "compaction.keepRecentTokens -5",
	} {
		if _, err := LoadBytes([]byte(yaml), nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want it to name %q", yaml, err, key)
		}
	}
}
