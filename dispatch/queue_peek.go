package dispatch

import (
	"context"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// A message's queue settings read by its accept (sessions.QueuePeek, issue
// 21). admit asks for the settings of the message's session (laneSettings);
// when queuecache.go has them not, that was a read of the session's entry
// right after the accept's write — on PostgreSQL a round trip for every
// message of a chat quieter than the cache's TTL, and for a session's
// first message on each replica. The accept is asked to read them in its
// own statement instead; a journal that cannot ignores the request, and
// laneSettings reads the entry as before.

// peekWant is the session a record's settings are wanted for, and the
// cache's mark taken before the accept (queueCache.noteRead).
type peekWant struct {
	key  routing.Key
	mark uint64
}

// peekQueue returns ctx asking the accept of w's record for the settings of
// w's session, unless they are cached.
func (d *Dispatcher) peekQueue(ctx context.Context, w *work) context.Context {
	if w.RecordID == "" {
		return ctx
	}
	_, ok, mark := d.queues.get(w.Key)
	if ok {
		return ctx
	}
	return d.withPeeks(ctx, map[string]peekWant{w.RecordID: {key: w.Key, mark: mark}})
}

// peekQueues is peekQueue for the records of a staged batch.
func (d *Dispatcher) peekQueues(ctx context.Context, items []stagedAccept) context.Context {
	var want map[string]peekWant
	for _, it := range items {
		if it.rec.ID == "" {
			continue
		}
		if _, ok, mark := d.queues.get(it.w.Key); !ok {
			if want == nil {
				want = map[string]peekWant{}
			}
			want[it.rec.ID] = peekWant{key: it.w.Key, mark: mark}
		}
	}
	if want == nil {
		return ctx
	}
	return d.withPeeks(ctx, want)
}

// withPeeks returns ctx carrying a QueuePeek for want (not changed after).
func (d *Dispatcher) withPeeks(ctx context.Context, want map[string]peekWant) context.Context {
	return sessions.WithQueuePeek(ctx, &sessions.QueuePeek{
		Want: func(id string) bool { _, ok := want[id]; return ok },
		Got: func(id string, e sessions.Entry, _ bool) {
			if p, ok := want[id]; ok {
				d.queues.noteRead(p.key, e, p.mark) // no entry: none of its own, as laneSettings notes
			}
		},
	})
}
