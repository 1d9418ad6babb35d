package dispatch

import (
	"fmt"
	"time"

	"github.com/gateway/gateway/channels"
)

// InboundConfig is messages.inbound: how messages from one sender that
// arrive close together are joined into one input before the turn
// (burst.go). A byChannel entry replaces the global Debounce and
// PasteWindow for its channel (an entry with zeros turns assembly off
// there); the caps are global.
type InboundConfig struct {
	// Debounce holds a sender's message this long for more of the same
	// sender in the same room; each arrival restarts it. 0 is off.
	Debounce time.Duration `mapstructure:"debounce"`
	// PasteWindow is the longer hold after a fragment of at least
	// PasteMinChars characters, counted in UTF-16 units as Telegram does
	// (a client's split of a long paste); such a
	// fragment and the next part are joined with nothing between them.
	PasteWindow   time.Duration `mapstructure:"pasteWindow"`
	PasteMinChars int           `mapstructure:"pasteMinChars"`
	// MaxParts joins at most that many messages (reaching it flushes at
	// once); MaxChars caps the joined text (a part that would pass it
	// starts a new input).
	MaxParts  int                       `mapstructure:"maxParts"`
	MaxChars  int                       `mapstructure:"maxChars"`
	ByChannel map[string]InboundChannel `mapstructure:"byChannel"`
}

// InboundChannel is one messages.inbound.byChannel entry.
type InboundChannel struct {
	Debounce    time.Duration `mapstructure:"debounce"`
	PasteWindow time.Duration `mapstructure:"pasteWindow"`
}

// Defaults of messages.inbound: Telegram holds 300 ms (1.5 s after a
// fragment of a split paste, which Telegram clients cut at 4096
// characters); Discord and web are off unless configured (Discord clients
// do not split, and the web chat's requests wait for their own answer).
const (
	DefaultTelegramDebounce = 300 * time.Millisecond
	DefaultPasteWindow      = 1500 * time.Millisecond
	DefaultPasteMinChars    = 4000
	DefaultBurstMaxParts    = 12
	DefaultBurstMaxChars    = 50000
)

// DefaultInbound returns the documented defaults of messages.inbound.
func DefaultInbound() InboundConfig {
	return InboundConfig{
		PasteMinChars: DefaultPasteMinChars, MaxParts: DefaultBurstMaxParts, MaxChars: DefaultBurstMaxChars,
		ByChannel: map[string]InboundChannel{
			"telegram": {Debounce: DefaultTelegramDebounce, PasteWindow: DefaultPasteWindow},
		},
	}
}

// Validate names the first bad key.
func (c InboundConfig) Validate() error {
	const path = "messages.inbound"
	if err := checkWindow(path+".debounce", c.Debounce); err != nil {
		return err
	}
	if err := checkWindow(path+".pasteWindow", c.PasteWindow); err != nil {
		return err
	}
	if c.PasteMinChars < 1 {
		return fmt.Errorf("%s.pasteMinChars: %d must be at least 1", path, c.PasteMinChars)
	}
	if c.MaxParts < 1 || c.MaxParts > 100 {
		return fmt.Errorf("%s.maxParts: %d is not between 1 and 100", path, c.MaxParts)
	}
	if c.MaxChars < 1 || c.MaxChars > 1<<20 {
		return fmt.Errorf("%s.maxChars: %d is not between 1 and 1048576", path, c.MaxChars)
	}
	for ch, o := range c.ByChannel {
		if err := checkWindow(path+".byChannel."+ch+".debounce", o.Debounce); err != nil {
			return err
		}
		if err := checkWindow(path+".byChannel."+ch+".pasteWindow", o.PasteWindow); err != nil {
			return err
		}
	}
	return nil
}

// maxHoldWindow bounds a hold: a longer one only delays answers.
const maxHoldWindow = time.Minute

func checkWindow(key string, d time.Duration) error {
	if d < 0 || d > maxHoldWindow {
		return fmt.Errorf("%s: %s is not between 0s and %s", key, d, maxHoldWindow)
	}
	return nil
}

// burstRule is messages.inbound resolved for one channel.
type burstRule struct {
	debounce, paste time.Duration
	pasteMin        int
	maxParts        int
	maxChars        int
}

// on reports whether the channel assembles bursts at all.
func (r burstRule) on() bool { return r.debounce > 0 || r.paste > 0 }

// rule resolves c for channel; a zero InboundConfig (tests, embedders
// that set nothing) is off everywhere.
func (c InboundConfig) rule(channel string) burstRule {
	r := burstRule{debounce: c.Debounce, paste: c.PasteWindow, pasteMin: c.PasteMinChars,
		maxParts: c.MaxParts, maxChars: c.MaxChars}
	if o, ok := c.ByChannel[channel]; ok {
		r.debounce, r.paste = o.Debounce, o.PasteWindow
	}
	if r.pasteMin <= 0 {
		r.pasteMin = DefaultPasteMinChars
	}
	if r.maxParts <= 0 {
		r.maxParts = DefaultBurstMaxParts
	}
	if r.maxChars <= 0 {
		r.maxChars = DefaultBurstMaxChars
	}
	return r
}

// window is how long a burst whose last part is last stays held: the paste
// window after a long fragment, else the debounce.
func (r burstRule) window(last *work) time.Duration {
	if r.paste > 0 && r.fragment(last) {
		return max(r.debounce, r.paste)
	}
	return r.debounce
}

// fragment reports whether w looks like a piece of a client-split paste.
// Its length is counted in UTF-16 units, the unit Telegram clients cut at
// (an emoji is two).
func (r burstRule) fragment(w *work) bool {
	return r.paste > 0 && channels.UTF16Len(w.In.Text) >= r.pasteMin
}

// glue is what joins part w to prev in one input: nothing when prev is a
// paste fragment and w followed within the paste window (the text was one
// message before the client split it), else a newline (they were separate
// messages). It depends only on journaled fields, so a replay joins alike.
func (r burstRule) glue(prev, w *work) string {
	if r.fragment(prev) && !w.AcceptedAt.Before(prev.AcceptedAt) && w.AcceptedAt.Sub(prev.AcceptedAt) <= r.paste {
		return ""
	}
	return "\n"
}
