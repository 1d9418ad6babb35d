package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// leaseWaiters wakes the turns waiting for a session (Delivery.WaitTurn)
// when that session's lease is released: one connection of the handle
// LISTENs on releasedChannel, started by the first wait and kept until the
// handle closes, and each notification (its payload is the lease's name)
// wakes the waiter of that lease only. Waking every waiter on every
// release made each retry a BeginTurn, a statement reading pg_locks, for
// every session waiting in every replica: with three replicas spread round
// robin, six BeginTurns per message (issue 21). A release heard between a
// BeginTurn that found the session held and the WaitTurn after it is not
// lost: asked remembers it, and that wait returns at once. While the
// connection is down, waits end by their timeout; each time it is
// (re)established every waiter is woken, for a release it may have missed.
// In one process a session has at most one waiter (its lane's).
//
// The same connection LISTENs on releasedDeliveryChannel for the
// dispatcher's wait between two looks for orphans (Delivery.WaitOrphans):
// a handle that closed wakes it. Acquiring a pool connection, LISTEN and
// UNLISTEN for every wait cost two round trips every two seconds on every
// replica and held a pool connection between them (issue 21); and a
// close heard while nobody waits is kept (orphansHeard) for the next wait
// instead of being missed.
type leaseWaiters struct {
	// mu guards subs, asked, orphans, orphansHeard, started and closing.
	mu sync.Mutex
	// subs holds each waiting turn's channel and the lease it waits for.
	subs map[chan struct{}]string
	// asked holds the leases a BeginTurn was sent for and not held, with
	// whether a release of it (or a reconnection) was heard since.
	asked map[string]bool
	// orphans holds the channels of the waits for orphans.
	orphans map[chan struct{}]struct{}
	// orphansHeard: a handle closed (or the listener reconnected) while
	// no wait for orphans was running; the next returns at once.
	orphansHeard bool
	started      bool
	// closing: the handle is closing (end); no listener starts any more.
	closing bool
	// listening runs the listener goroutine; end waits for it.
	listening sync.WaitGroup
	stop      chan struct{} // the handle's: closed by Close
	log       *zap.Logger
}

// ask notes that a BeginTurn for lease name is being sent: a release heard
// from now on ends the WaitTurn after it at once.
func (w *leaseWaiters) ask(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asked == nil {
		w.asked = map[string]bool{}
	}
	w.asked[name] = false
}

// held forgets name's ask: its BeginTurn took the lease (or failed).
func (w *leaseWaiters) held(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.asked, name)
}

func (w *leaseWaiters) wait(ctx context.Context, db *DB, name string, d time.Duration) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.asked[name] {
		delete(w.asked, name) // released since the BeginTurn was sent
		w.mu.Unlock()
		return
	}
	if w.subs == nil {
		w.subs = map[chan struct{}]string{}
	}
	w.subs[ch] = name
	w.startLocked(db)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.subs, ch)
		delete(w.asked, name)
		w.mu.Unlock()
	}()
	w.await(ctx, ch, d)
}

// startLocked starts the listening connection if it is not running; w.mu
// is held.
func (w *leaseWaiters) startLocked(db *DB) {
	if !w.started && !w.closing {
		w.started = true
		w.listening.Go(func() { w.listen(db) })
	}
}

// await returns when ch is signalled, after d, or when ctx ends or the
// handle closes.
func (w *leaseWaiters) await(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-w.stop:
	}
}

// waitOrphans returns after d, when a handle closes (a notification on
// releasedDeliveryChannel, also one heard since the last wait), or when
// ctx ends or the handle closes.
func (w *leaseWaiters) waitOrphans(ctx context.Context, db *DB, d time.Duration) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.orphansHeard {
		w.orphansHeard = false
		w.mu.Unlock()
		return
	}
	if w.orphans == nil {
		w.orphans = map[chan struct{}]struct{}{}
	}
	w.orphans[ch] = struct{}{}
	w.startLocked(db)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.orphans, ch)
		w.mu.Unlock()
	}()
	w.await(ctx, ch, d)
}

// orphansReleased wakes the waits for orphans; when none is running, a
// release heard (keep) is noted for the next one.
func (w *leaseWaiters) orphansReleased(keep bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.orphans) == 0 {
		w.orphansHeard = w.orphansHeard || keep
		return
	}
	for ch := range w.orphans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// released wakes the waiter of lease name and notes the release for a
// BeginTurn in flight; "" stands for every lease (a release may have been
// missed).
func (w *leaseWaiters) released(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch, n := range w.subs {
		if name != "" && n != name {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if name == "" {
		for n := range w.asked {
			w.asked[n] = true
		}
	} else if _, ok := w.asked[name]; ok {
		w.asked[name] = true
	}
}

// end waits for the listener to stop, once the handle's stop channel is
// closed (Delivery.Close), and keeps another from starting.
func (w *leaseWaiters) end() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.listening.Wait()
}

// listen holds the LISTEN connection until the handle closes, connecting
// again a second after a failure.
func (w *leaseWaiters) listen(db *DB) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-w.stop
		cancel()
	}()
	for ctx.Err() == nil {
		if err := w.listenOnce(ctx, db); err != nil && ctx.Err() == nil {
			w.log.Debug("session lease listener lost its connection; reconnecting", zap.Error(err))
			w.released("") // a release may have been missed meanwhile
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (w *leaseWaiters) listenOnce(ctx context.Context, db *DB) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	for _, ch := range []string{releasedChannel, releasedDeliveryChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	// A release between a waiter's start and this LISTEN was not heard:
	// the waiters ask again now (the first WaitTurn of a handle returns
	// once its listener is up, and so does a wait for orphans: the look
	// that follows finds what a handle closed meanwhile left).
	w.released("")
	w.orphansReleased(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == releasedDeliveryChannel {
			w.orphansReleased(true)
			continue
		}
		w.released(n.Payload)
	}
}
