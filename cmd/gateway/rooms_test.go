package main

import (
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
)

// TestRoomStreamingFromAccount: an account's streaming.mode reaches its
// rooms; other accounts and channels keep the default (off).
func TestRoomStreamingFromAccount(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte(`
channels:
  telegram:
    accounts:
      default: {token: "1:x", streaming: {mode: progress}}
      quiet: {token: "2:y"}
  discord:
    accounts:
      default: {token: "d", streaming: {mode: partial}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	room := roomFunc(cfg)
	for _, tt := range []struct{ channel, account, want string }{
		{"telegram", "default", channels.StreamProgress},
		{"telegram", "quiet", channels.StreamOff},
		{"discord", "default", channels.StreamPartial},
		{"web", "default", channels.StreamOff},
	} {
		if got := room(channels.Inbound{Channel: tt.channel, AccountID: tt.account}).Streaming; got != tt.want {
			t.Errorf("%s/%s: streaming %q, want %q", tt.channel, tt.account, got, tt.want)
		}
	}
}

// TestStreamingModeReloadsWithoutRestart: a changed streaming.mode is not
// a restart-only change; the reloaded runtime's rooms carry it.
func TestStreamingModeReloadsWithoutRestart(t *testing.T) {
	load := func(mode string) *configs.Config {
		cfg, err := configs.LoadBytes([]byte(`channels: {telegram: {accounts: {default: {token: "1:a", streaming: {mode: `+mode+`}}}}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	before, after := load("off"), load("partial")
	if got := restartOnly(before, after); len(got) != 0 {
		t.Errorf("restartOnly = %v, want none", got)
	}
	in := channels.Inbound{Channel: "telegram", AccountID: "default"}
	if got := roomFunc(after)(in).Streaming; got != channels.StreamPartial {
		t.Errorf("reloaded rooms stream %q", got)
	}
}
