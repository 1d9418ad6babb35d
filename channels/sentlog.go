package channels

import "sync"

// DefaultSentLogSize is how many sent messages a SentLog remembers.
const DefaultSentLogSize = 8192

// SentLog remembers where the bot's latest messages went, by chat and
// message id, so an adapter whose platform does not say whose message a
// reaction is on (Telegram's message_reaction) can tell a reaction to the
// bot's message, and the thread or topic it was in, which the update does
// not carry either. It is in memory and bounded: a message older than the
// last Size sent, or sent before the process started, is not the bot's
// as far as it knows. The zero value is ready (DefaultSentLogSize); it is
// safe for concurrent use.
type SentLog struct {
	Size int

	mu    sync.Mutex // guards at, order, next
	at    map[sentKey]Address
	order []sentKey // ring of the keys in at, oldest at next
	next  int
}

type sentKey struct{ chat, id string }

// Add records that message id of chat was sent to addr.
func (l *SentLog) Add(chat, id string, addr Address) {
	if chat == "" || id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.Size
	if size <= 0 {
		size = DefaultSentLogSize
	}
	if l.at == nil {
		l.at = map[sentKey]Address{}
	}
	k := sentKey{chat, id}
	if _, ok := l.at[k]; ok {
		l.at[k] = addr
		return
	}
	if len(l.order) < size {
		l.order = append(l.order, k)
	} else {
		delete(l.at, l.order[l.next])
		l.order[l.next] = k
		l.next = (l.next + 1) % size
	}
	l.at[k] = addr
}

// Lookup returns where message id of chat was sent, if the bot sent it
// and it is still remembered.
func (l *SentLog) Lookup(chat, id string) (Address, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.at[sentKey{chat, id}]
	return a, ok
}
