package sessions

import "context"

// QueuePeek asks a journal's Accept to read, in the round trip that stores
// a record, the queue settings of the record's session (its entry's
// QueueMode, QueueDebounceMs, QueueCap and QueueDrop, with its SessionID and
// SessionKey; no other field is set). The dispatcher needs them to queue
// the message, and a backend whose reads cost a round trip (pgstore) would
// otherwise read the entry again right after the accept: for every message
// of a chat quieter than the dispatcher's cache of them (issue 21), and for
// a session's first message on each replica. A journal that cannot read
// them with its write ignores the request; the dispatcher then reads the
// entry as before.
type QueuePeek struct {
	// Want reports whether the settings of record id's session are wanted
	// (the dispatcher has them cached for most records).
	Want func(recordID string) bool
	// Got receives them once the record's write committed: e is the
	// session's entry, its queue fields only; found is false when the key
	// has no entry (no settings of its own). It must not block.
	Got func(recordID string, e Entry, found bool)
}

type queuePeekKey struct{}

// WithQueuePeek returns ctx carrying p for the Accept made with it.
func WithQueuePeek(ctx context.Context, p *QueuePeek) context.Context {
	return context.WithValue(ctx, queuePeekKey{}, p)
}

// QueuePeekFrom returns the QueuePeek ctx carries, nil if none.
func QueuePeekFrom(ctx context.Context) *QueuePeek {
	p, _ := ctx.Value(queuePeekKey{}).(*QueuePeek)
	return p
}
