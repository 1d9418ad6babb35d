package configs

import (
	"strings"
	"testing"
)

// TestDiscordSlashCommands: slashCommands takes guild, global or off, and
// anything else is refused naming the key.
func TestDiscordSlashCommands(t *testing.T) {
	for _, v := range []string{"guild", "global", "off"} {
		y := "channels: {discord: {accounts: {default: {token: t, slashCommands: " + v + "}}}}\n"
		c, err := LoadBytes([]byte(y), nil)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got := c.Channels.Discord.Accounts["default"].SlashCommands; got != v {
			t.Errorf("slashCommands = %q, want %q", got, v)
		}
	}
	_, err := LoadBytes([]byte("channels: {discord: {accounts: {default: {token: t, slashCommands: everywhere}}}}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "channels.discord.accounts.default.slashCommands") {
		t.Fatalf("error %v does not name channels.discord.accounts.default.slashCommands", err)
	}
}
