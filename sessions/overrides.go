package sessions

import (
	"fmt"
	"strings"
)

// Reasoning effort levels of Entry.ThinkingLevel (/think).
const (
	ThinkingOff    = "off"
	ThinkingLow    = "low"
	ThinkingMedium = "medium"
	ThinkingHigh   = "high"
)

// ThinkingLevels are the levels /think accepts, weakest first.
var ThinkingLevels = []string{ThinkingOff, ThinkingLow, ThinkingMedium, ThinkingHigh}

// ParseThinking checks a thinking level ("" clears it, any case).
func ParseThinking(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", nil
	}
	for _, l := range ThinkingLevels {
		if s == l {
			return s, nil
		}
	}
	return "", fmt.Errorf("thinking level %q: want off, low, medium or high", s)
}

// Group activation of Entry.GroupActivation (/activation, seed 002): a
// group session answers only messages that address the bot, or every
// message the room's access rules admit.
const (
	ActivationMention = "mention"
	ActivationAlways  = "always"
)

// ParseActivation checks a group activation ("" clears it, any case).
func ParseActivation(s string) (string, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "", ActivationMention, ActivationAlways:
		return s, nil
	}
	return "", fmt.Errorf("group activation %q: want mention or always", s)
}

// ModelFor is the "provider/model" e's overrides name, "" when it has
// none: ModelOverride as written when it names its provider, else joined
// to ProviderOverride (an imported OpenClaw entry).
func (e Entry) ModelFor() string {
	m := e.ModelOverride
	if m == "" || strings.Contains(m, "/") || e.ProviderOverride == "" {
		return m
	}
	return e.ProviderOverride + "/" + m
}

// Send policies of Entry.SendPolicy (seed 002).
const (
	SendAllow = "allow"
	SendDeny  = "deny"
)

// ParseSendPolicy checks a send policy ("" clears it, any case).
func ParseSendPolicy(s string) (string, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "", SendAllow, SendDeny:
		return s, nil
	}
	return "", fmt.Errorf("send policy %q: want allow or deny", s)
}

// Sends reports whether e's replies go to its chat (SendPolicy is not
// deny).
func (e Entry) Sends() bool { return e.SendPolicy != SendDeny }
