package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// leaseWaiters wakes the turns waiting for a session (Delivery.WaitTurn)
// when any lease is released: one connection of the handle LISTENs on
// releasedChannel, started by the first wait and kept until the handle
// closes, and every notification wakes every waiter (each asks again for
// its own session; releases are as frequent as turns, waiters few). While
// that connection is down, waits end by their timeout; each time it is
// (re)established every waiter is woken, for a release it may have missed.
type leaseWaiters struct {
	mu      sync.Mutex
	subs    map[chan struct{}]struct{}
	started bool
	stop    chan struct{} // the handle's: closed by Close
	log     *zap.Logger
}

func (w *leaseWaiters) wait(ctx context.Context, db *DB, d time.Duration) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	w.subs[ch] = struct{}{}
	if !w.started {
		w.started = true
		go w.listen(db)
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-w.stop:
	}
}

// wake wakes every waiter.
func (w *leaseWaiters) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
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
			w.wake() // a release may have been missed meanwhile
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
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+releasedChannel); err != nil {
		return err
	}
	// A release between a waiter's start and this LISTEN was not heard:
	// the waiters ask again now (the first WaitTurn of a handle returns
	// once its listener is up).
	w.wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		w.wake()
	}
}
