package dispatch

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// startTyping shows the typing indicator in the reply's chat until the
// returned func is called (it waits for the loop to end).
//
// The loop starts only once the turn has run for typingDelay (a timer
// starts it): a turn answered sooner, the usual one on a fast model, costs
// a stopped timer, no goroutine and no contexts (issue 21: they were a
// tenth of a message's allocations at load).
func (t *turn) startTyping(ctx context.Context, a channels.Adapter) func() {
	ty, ok := a.(channels.Typer)
	if a == nil || !ok {
		return func() {}
	}
	l := &typingLoop{d: t.d, ty: ty, out: t.out, ctx: ctx, done: make(chan struct{})}
	delay := t.d.typingWait()
	if delay <= 0 {
		go l.run() // owned by the turn: the returned func waits for it
		return l.stop
	}
	timer := time.AfterFunc(delay, l.run)
	return func() {
		if timer.Stop() {
			return // the loop never started
		}
		l.stop()
	}
}

// typingLoop is one turn's typing indicator: run sends the action every
// typingEvery until stop (or the turn's context) ends it.
type typingLoop struct {
	d    *Dispatcher
	ty   channels.Typer
	out  channels.Outbound
	ctx  context.Context // the turn's: its end ends the loop
	done chan struct{}   // closed when run returns

	mu      sync.Mutex // guards the fields below
	stopped bool       // stop was called: run must not start
	// stopLoop ends the loop; cancelCall cancels a typing action in
	// flight. Both are set by run once it starts, nil before.
	stopLoop, cancelCall context.CancelFunc
}

// run is the loop. The loop stops when the turn ends (stopLoop); a call in
// flight then is let finish (up to typingDrain) rather than cancelled:
// cancelling an HTTP request closes its connection, so the reply would pay
// a new connection (a TLS handshake on the real Bot API) for a typing
// action that would have completed. Waiting for it keeps the order: the
// action never lands after the reply.
func (l *typingLoop) run() {
	defer close(l.done)
	l.mu.Lock()
	if l.stopped || l.ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	loopCtx, stopLoop := context.WithCancel(l.ctx)
	callCtx, cancelCall := context.WithCancel(l.ctx)
	l.stopLoop, l.cancelCall = stopLoop, cancelCall
	l.mu.Unlock()
	tick := time.NewTicker(typingEvery)
	defer tick.Stop()
	for {
		if err := l.ty.Typing(callCtx, l.out); err != nil && callCtx.Err() == nil {
			l.d.log.Debug("typing indicator failed", zap.Error(err))
		}
		select {
		case <-loopCtx.Done():
			return
		case <-tick.C:
		}
	}
}

// stop ends the loop and waits for it: a typing action in flight is let
// finish for up to typingDrain, then cancelled.
func (l *typingLoop) stop() {
	l.mu.Lock()
	l.stopped = true
	stopLoop, cancelCall := l.stopLoop, l.cancelCall
	l.mu.Unlock()
	if stopLoop == nil { // run has not started the loop and will not
		<-l.done
		return
	}
	stopLoop()
	wait := typingDrain
	if l.d.typingDrain > 0 {
		wait = l.d.typingDrain
	}
	drain := time.NewTimer(wait)
	defer drain.Stop()
	select {
	case <-l.done:
	case <-drain.C:
		cancelCall()
		<-l.done
	}
	cancelCall()
}
