package sessions

import (
	"strings"
	"testing"
	"time"
)

// An operator who writes the channel of resetByChannel as the platform
// spells it ("Telegram") gets that policy, as a binding's match.channel
// matches whatever the case: the policy was silently ignored, and the
// session never reset.
func TestResetByChannelMatchesChannelCaseInsensitively(t *testing.T) {
	cfg := ResetConfig{ResetByChannel: map[string]ResetPolicy{"Telegram": {Mode: ResetIdle, IdleMinutes: intp(5)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	key := mustKey(t, "agent:main:telegram:direct:1")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := Entry{SessionStartedAt: now.Add(-time.Hour), LastInteractionAt: now.Add(-10 * time.Minute)}
	if stale, reason := Evaluate(cfg, key, e, now); !stale || reason != ReasonIdle {
		t.Fatalf("Evaluate = %v %q, want stale by the Telegram policy (idle)", stale, reason)
	}
	if _, last, ok := FreshBounds(cfg, key, now); !ok || !last.Equal(now.Add(-5*time.Minute)) {
		t.Fatalf("FreshBounds last = %v %v, want the Telegram policy's idle bound", last, ok)
	}
}

// Two spellings of one channel are one policy written twice: which one
// applied would be a coin toss.
func TestResetByChannelRefusesOneChannelTwice(t *testing.T) {
	cfg := ResetConfig{ResetByChannel: map[string]ResetPolicy{
		"discord": {Mode: ResetIdle, IdleMinutes: intp(5)},
		"Discord": {Mode: ResetDaily},
	}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "session.resetByChannel.discord") {
		t.Fatalf("Validate = %v, want an error naming the channel written twice", err)
	}
}
