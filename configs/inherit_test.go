package configs

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestInheritParentValues: Discord's thread.inheritParent takes false,
// true (digest, as before), digest or fork; anything else is refused
// naming the key.
func TestInheritParentValues(t *testing.T) {
	load := func(v string) (*Config, error) {
		return LoadBytes([]byte("channels:\n  discord:\n    accounts:\n      default:\n        token: t\n        thread: {inheritParent: "+v+"}\n"), nil)
	}
	for v, want := range map[string]channels.Inherit{
		"false": channels.InheritNone, "true": channels.InheritDigest, "digest": channels.InheritDigest, "fork": channels.InheritFork,
	} {
		c, err := load(v)
		if err != nil {
			t.Fatalf("inheritParent: %s: %v", v, err)
		}
		if got := c.Channels.Discord.Accounts["default"].Access().InheritParent; got != want {
			t.Errorf("inheritParent: %s = %q, want %q", v, got, want)
		}
	}
	if _, err := load("copy"); err == nil || !strings.Contains(err.Error(), "thread.inheritParent") || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("inheritParent: copy: err = %v, want a refusal naming the key and the modes", err)
	}
}
