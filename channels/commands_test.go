package channels_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestCommandCatalogue: the catalogue fits both platforms' rules (Telegram
// command names, Discord's 100-character descriptions and option names),
// has no duplicates, and /help lists every command with its usage.
func TestCommandCatalogue(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	seen := map[string]bool{}
	help := channels.HelpText(channels.Commands())
	for _, c := range channels.Commands() {
		if !name.MatchString(c.Name) || seen[c.Name] {
			t.Errorf("command %q: invalid or duplicate name", c.Name)
		}
		seen[c.Name] = true
		if n := len([]rune(c.Description)); n < 3 || n > 100 {
			t.Errorf("/%s: description of %d characters", c.Name, n)
		}
		if c.Arg != "" && (!name.MatchString(c.Arg) || c.ArgDescription == "" || len([]rune(c.ArgDescription)) > 100) {
			t.Errorf("/%s: option %q or its description is invalid", c.Name, c.Arg)
		}
		line := "/" + c.Name
		if c.Usage != "" {
			line += " " + c.Usage
		}
		if !strings.Contains(help, line+" – "+c.Description) {
			t.Errorf("/help lacks %q", line)
		}
		if got, ok := channels.LookupCommand(strings.ToUpper(c.Name)); !ok || got.Name != c.Name {
			t.Errorf("LookupCommand(%q) = %+v, %v", c.Name, got, ok)
		}
	}
	for _, want := range []string{"new", "reset", "compact", "status", "queue", "stop", "sessions", "switch", "history", "delete", "help"} {
		if !seen[want] {
			t.Errorf("/%s missing from the catalogue", want)
		}
	}
	if _, ok := channels.LookupCommand("nope"); ok {
		t.Error("LookupCommand found an unknown command")
	}
}
