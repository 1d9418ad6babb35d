package telegram

import (
	"sync"
	"time"

	"github.com/gateway/gateway/channels"
)

// Telegram clients cut a message longer than 4096 characters into several
// sent back to back, and only the first carries the @mention. pasteFollow
// lets the rest through mention gating: a group message from the sender
// of an addressed fragment (at least pasteFragmentMin UTF-16 units, the
// unit of Telegram's limit: an emoji counts two), in the
// same chat and topic, dated within pasteFollowWindow of it, is addressed
// too. The dispatcher then joins the fragments into one input
// (messages.inbound). Telegram's own message dates (whole seconds) are
// used, so a backlog read after downtime follows the same rule.
const (
	pasteFragmentMin  = 4000
	pasteFollowWindow = 2 * time.Second
	maxPasteMarks     = 1024 // bound on remembered fragments
)

// pasteFollow remembers the last addressed fragment per chat, topic and
// sender. Safe for concurrent use.
type pasteFollow struct {
	mu    sync.Mutex
	marks map[string]time.Time // guarded by mu; key pasteKey, value the fragment's date
}

func pasteKey(in channels.Inbound) string {
	return in.ChatID + "/" + in.ThreadID + "/" + in.SenderID
}

// follow reports whether the group message in is addressed: mentioned, or
// the next fragment of an addressed paste. It remembers an addressed
// fragment for the next one.
func (p *pasteFollow) follow(in channels.Inbound) bool {
	if in.SenderID == "" {
		return in.Mentioned
	}
	k := pasteKey(in)
	fragment := channels.UTF16Len(in.Text) >= pasteFragmentMin
	p.mu.Lock()
	defer p.mu.Unlock()
	addressed := in.Mentioned
	if at, ok := p.marks[k]; ok && !addressed {
		gap := in.Time.Sub(at)
		addressed = gap >= 0 && gap <= pasteFollowWindow
	}
	switch {
	case addressed && fragment:
		if p.marks == nil {
			p.marks = map[string]time.Time{}
		}
		if _, ok := p.marks[k]; !ok && len(p.marks) >= maxPasteMarks {
			for old := range p.marks {
				delete(p.marks, old)
				break
			}
		}
		p.marks[k] = in.Time
	case addressed:
		delete(p.marks, k) // the paste's last (shorter) fragment, or a new message
	}
	return addressed
}
