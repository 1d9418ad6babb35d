package configs

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/dispatch"
)

// TestInboundBursts: messages.inbound defaults (Telegram 300 ms, paste
// window 1.5 s, others off), a byChannel entry added beside the default
// one, an entry that turns Telegram off, and errors naming the key.
func TestInboundBursts(t *testing.T) {
	load := func(t *testing.T, yaml string) dispatch.InboundConfig {
		t.Helper()
		c, err := LoadBytes([]byte(yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Messages.Inbound
	}
	d := load(t, "")
	tg := d.ByChannel["telegram"]
	if d.Debounce != 0 || tg.Debounce != 300*time.Millisecond || tg.PasteWindow != 1500*time.Millisecond ||
		d.MaxParts != 12 || d.MaxChars != 50000 || d.PasteMinChars != 4000 {
		t.Errorf("defaults %+v", d)
	}
	c := load(t, "messages: {inbound: {byChannel: {discord: {debounce: 2s}}}}")
	if c.ByChannel["discord"].Debounce != 2*time.Second || c.ByChannel["telegram"].Debounce != 300*time.Millisecond {
		t.Errorf("discord entry beside the default telegram one: %+v", c.ByChannel)
	}
	c = load(t, "messages: {inbound: {debounce: 1s, byChannel: {telegram: {}}}}")
	if c.Debounce != time.Second || c.ByChannel["telegram"] != (dispatch.InboundChannel{}) {
		t.Errorf("telegram turned off: %+v", c)
	}
	env, err := LoadBytes(nil, []string{"GATEWAY_MESSAGES_INBOUND_BY_CHANNEL_DISCORD_DEBOUNCE=750ms",
		"GATEWAY_MESSAGES_INBOUND_MAX_PARTS=5"})
	if err != nil {
		t.Fatal(err)
	}
	if c := env.Messages.Inbound; c.ByChannel["discord"].Debounce != 750*time.Millisecond || c.MaxParts != 5 ||
		c.ByChannel["telegram"].Debounce != 300*time.Millisecond {
		t.Errorf("environment overrides: %+v", c)
	}
	for yaml, key := range map[string]string{
		"messages: {inbound: {debounce: -1s}}":                            "messages.inbound.debounce",
		"messages: {inbound: {maxParts: 0}}":                              "messages.inbound.maxParts",
		"messages: {inbound: {maxChars: -5}}":                             "messages.inbound.maxChars",
		"messages: {inbound: {byChannel: {telegram: {pasteWindow: 2h}}}}": "messages.inbound.byChannel.telegram.pasteWindow",
		"messages: {inbound: {byChannel: {telegram: {debouncee: 1s}}}}":   "debouncee",
		"messages: {inbound: {pasteMinChars: 0}}":                         "messages.inbound.pasteMinChars",
	} {
		if _, err := LoadBytes([]byte(yaml), nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %s", yaml, err, key)
		}
	}
}
