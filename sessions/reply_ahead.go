package sessions

import (
	"context"
	"sync"
)

// ReplyAhead is a turn's reply handed to the transcript append of the
// answer it sends (WithReplyAhead on that append's context), so that a
// backend that can (PostgreSQL) stores it as Delivery.Ready would, with
// the turn's usage rows, in the append's own transaction: the reply's
// durable write and its outbox record are one commit instead of two
// (issue 21). Either both are committed or neither: an outbox record never
// exists without its transcript entry, and a crash before the commit
// leaves what a crash before the append leaves. A backend that stores it
// calls Take once the append committed; the others ignore it, and the
// caller, finding it not taken, stores the reply with Ready as before.
type ReplyAhead struct {
	// Journal is the Delivery the reply is stored in: a backend takes the
	// reply only into a Delivery of its own.
	Journal Delivery
	// Build returns the reply answering with transcript entry entryID
	// (the append's, drawn by the backend) and the turn's usage rows (none
	// when nil). It may be called once per try of the append (an entry
	// id drawn again after a collision); only the reply taken counts.
	Build func(entryID string) (Reply, []UsageRow)

	mu    sync.Mutex
	taken *Reply
}

// Take records that r (and its usage rows) was committed with the append.
func (a *ReplyAhead) Take(r Reply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.taken = &r
}

// Taken returns the reply a backend stored with the append, if one did.
// Safe on nil.
func (a *ReplyAhead) Taken() (Reply, bool) {
	if a == nil {
		return Reply{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.taken == nil {
		return Reply{}, false
	}
	return *a.taken, true
}

// ReplyAheadTaker is a Delivery that stores a ReplyAhead with the append
// that carries it (pgstore's). A caller offers one only to such a
// Delivery: building the reply ahead costs a turn work that a backend
// ignoring it (files, SQLite) would see done twice.
type ReplyAheadTaker interface {
	Delivery
	TakesReplyAhead() bool
}

type replyAheadKey struct{}

// WithReplyAhead returns ctx carrying a for the transcript append made
// with it (TranscriptLog.Append of one message).
func WithReplyAhead(ctx context.Context, a *ReplyAhead) context.Context {
	return context.WithValue(ctx, replyAheadKey{}, a)
}

// ReplyAheadFrom returns the ReplyAhead ctx carries, nil if none.
func ReplyAheadFrom(ctx context.Context) *ReplyAhead {
	a, _ := ctx.Value(replyAheadKey{}).(*ReplyAhead)
	return a
}
