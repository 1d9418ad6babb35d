package configs

import (
	"strings"
	"testing"
)

// TestCommandsPlatformAdmins: commands.platformAdmins is off by default,
// read as a boolean, and anything else is refused naming the key.
func TestCommandsPlatformAdmins(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       bool
		err        string // "" for valid
	}{
		{"default", "commands: {owners: [\"telegram:7\"]}", false, ""},
		{"on", "commands: {platformAdmins: true}", true, ""},
		{"off", "commands: {platformAdmins: false}", false, ""},
		{"with owners", "commands:\n  owners: [\"discord:5\"]\n  platformAdmins: true", true, ""},
		{"not a boolean", "commands: {platformAdmins: admins}", false, "platformAdmins"},
		{"a list", "commands: {platformAdmins: [telegram]}", false, "platformAdmins"},
		{"misspelt", "commands: {platformAdmin: true}", false, "platformAdmin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadBytes([]byte(tt.yaml+"\n"), nil)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("LoadBytes = %v, want an error naming %q", err, tt.err)
			case tt.err != "":
				return
			case err != nil:
				t.Fatal(err)
			}
			if c.Commands.PlatformAdmins != tt.want {
				t.Errorf("platformAdmins = %v, want %v", c.Commands.PlatformAdmins, tt.want)
			}
		})
	}
	if Default().Commands.PlatformAdmins {
		t.Error("platformAdmins is on by default")
	}
}
