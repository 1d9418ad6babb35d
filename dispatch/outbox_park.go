package dispatch

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Parked replies: a reply chunk the platform rate-limits for longer than
// the adapter waits is waited out on its session's lane but outside any
// concurrency slot (lanes.Queue.Next), so a flood wait in one chat holds
// no other chat's turn. The session's replies delivered meanwhile (later
// work of the same lane run: a batch's next turn, a command) queue behind
// the parked one and go out after it, in order; the session's next run
// waits for them all (Next holds the lane). All stay stored in the outbox
// until sent: a restart resends them in order from there.

// parkedReply is a stored reply waiting behind its session's parked one,
// or the parked one itself (waited: its rate-limit waits so far).
type parkedReply struct {
	a      channels.Adapter
	rp     sessions.Reply
	out    channels.Outbound
	waited time.Duration
}

// behindParked queues p behind lane's parked reply, if it has one, and
// reports whether it did.
func (o *outbox) behindParked(lane routing.Key, p parkedReply) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	q, ok := o.parked[lane]
	if !ok {
		return false
	}
	o.parked[lane] = append(q, p)
	o.d.log.Info("reply waits behind its session's rate-limited reply", zap.String("reply_id", p.rp.ID),
		zap.Stringer("session_key", lane))
	return true
}

// park hands p (from chunk p.rp.Sent) on to its session's lane after the
// caller's run, where it waits wait out and is sent, then what queued
// behind it. The continuation has no turn's values (its session lease ends
// with the turn; the reply's records, pending until it is sent, keep the
// session's order across replicas); the dispatcher's shutdown cuts its
// wait short as it begins (the replies stay stored) and the lanes' waits
// for it to end. It reports false when the
// lane takes nothing more (shutdown began): the caller waits in place.
func (o *outbox) park(lane routing.Key, p parkedReply, wait time.Duration) bool {
	d := o.d
	o.mu.Lock()
	if o.parked == nil {
		o.parked = map[routing.Key][]parkedReply{}
	}
	o.parked[lane] = nil
	o.mu.Unlock()
	o.wg.Add(1)
	err := d.queue.Next(d.life, lane, func(lctx context.Context) {
		defer o.wg.Done()
		wctx, cancel := context.WithCancel(lctx)
		defer cancel()
		defer context.AfterFunc(o.closing, cancel)()
		switch {
		case rateLimitWait(wctx, wait):
			o.sendParked(lane, p)
		case d.closing.Load() || o.stop.Err() != nil:
			o.unpark(lane) // shutdown: the replies stay in the outbox for the next start
		default:
			// /stop cancelled the lane: the replies still go out (they
			// answer messages already run), off the lane.
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				if rateLimitWait(o.stop, wait) {
					o.sendParked(lane, p)
					return
				}
				o.unpark(lane)
			}()
		}
	})
	if err != nil {
		o.wg.Done()
		o.unpark(lane)
		return false
	}
	return true
}

// sendParked sends p, then the replies queued behind it, in order.
func (o *outbox) sendParked(lane routing.Key, p parkedReply) {
	for {
		o.sendFrom(o.d.life, p.a, p.rp, p.out, nil, p.waited)
		o.mu.Lock()
		q := o.parked[lane]
		if len(q) == 0 || o.stop.Err() != nil {
			delete(o.parked, lane)
			o.mu.Unlock()
			return
		}
		p, o.parked[lane] = q[0], q[1:]
		o.mu.Unlock()
	}
}

// unpark forgets lane's parked replies (they stay in the outbox).
func (o *outbox) unpark(lane routing.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.parked, lane)
}
