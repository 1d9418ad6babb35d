package gatewayd

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/configs"
)

// TestChannelTableCoversChannels: every channel section of the config has
// a row, rows are named once, and each row can list and build its
// accounts; a channel without access rules has no room settings either.
func TestChannelTableCoversChannels(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range channelTable() {
		if r.name == "" || r.accounts == nil || r.build == nil {
			t.Errorf("row %q: name, accounts and build are required", r.name)
		}
		if seen[r.name] {
			t.Errorf("row %q appears twice", r.name)
		}
		seen[r.name] = true
		if got := channelOf(r.name); got == nil || got.name != r.name {
			t.Errorf("channelOf(%q) = %v", r.name, got)
		}
	}
	ct := reflect.TypeFor[configs.Channels]()
	for i := range ct.NumField() {
		name := strings.ToLower(ct.Field(i).Name)
		if !seen[name] {
			t.Errorf("configs.Channels.%s has no row in channelTable", ct.Field(i).Name)
		}
	}
	cfg, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+
		"channels: {telegram: {accounts: {b: {token: '1:a'}, a: {token: '2:b'}}}, discord: {accounts: {default: {token: d}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"web": {"default"}, "telegram": {"a", "b"}, "discord": {"default"}}
	for _, r := range channelTable() {
		if got := r.accounts(cfg); !slices.Equal(got, want[r.name]) {
			t.Errorf("%s accounts = %v, want %v", r.name, got, want[r.name])
		}
	}
	if open := openChannels(); !open["web"] || open["telegram"] || open["discord"] {
		t.Errorf("openChannels = %v, want web only", open)
	}
}
