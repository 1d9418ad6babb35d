package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Leader roles (issue 13): a singleton such as a bot account's Telegram
// poller runs on exactly one replica, the holder of the role's lease.

// DefaultLeaderTTL is the lease duration of leader roles: a crashed
// leader's role is taken over within about DefaultLeaderTTL plus the
// renewal interval (TTL/3), inside the 15 s failover budget.
const DefaultLeaderTTL = 10 * time.Second

// RunLeader campaigns for lease name and, while it holds it, runs fn with a
// context that is cancelled the moment the lease is lost (another holder
// took it) or could not be renewed in time. The lease is renewed every
// ttl/3; when renewals fail, the role is given up a quarter ttl before the
// lease could expire, so fn has stopped before another replica can take
// it. After losing the lease it campaigns again. A campaigner that does
// not hold the lease waits for its expiry or for the holder's release
// (LISTEN/NOTIFY), whichever comes first: a clean handover is immediate.
//
// RunLeader returns nil when ctx ends (after fn returned and the lease was
// released, unless l is WithoutRelease), and fn's error (nil included)
// when fn returns on its own while it leads; the lease is released then
// too. It blocks until then.
func RunLeader(ctx context.Context, l *Leases, name string, ttl time.Duration, fn func(context.Context) error) error {
	ctx = withOp(ctx, OpLease)
	if err := l.validate(name, ttl); err != nil {
		return fmt.Errorf("pgstore: leader %q: %w", name, err)
	}
	r := &leader{l: l, name: name, ttl: ttl, log: l.db.log.With(zap.String("lease", name), zap.String("replica_id", l.holder))}
	for {
		lease, err := r.campaign(ctx)
		if err != nil {
			return nil // ctx ended
		}
		if done, err := r.lead(ctx, lease, fn); done {
			return err
		}
	}
}

// leader is one RunLeader call's state.
type leader struct {
	l    *Leases
	name string
	ttl  time.Duration
	log  *zap.Logger
	// led is set once this call took the role: until then it takes the
	// lease fresh (AcquireFresh), so a process restarted under its
	// predecessor's replica id never inherits its token; later re-takes
	// (after giving the role up under load) keep it.
	led bool
}

// margin is how long before the lease's expiry a leader that cannot renew
// gives up its role, leaving fn that long to stop.
func (r *leader) margin() time.Duration { return r.ttl / 4 }

// campaign returns once this holder has the lease, or ctx's error. It
// listens for releases before each attempt, so none is missed.
func (r *leader) campaign(ctx context.Context) (Lease, error) {
	var conn *pgxpool.Conn
	defer func() { r.unlisten(conn) }()
	failWait := 100 * time.Millisecond
	logged := false
	for {
		if conn == nil {
			conn = r.listen(ctx)
		}
		lease, ok, err := r.l.acquire(ctx, r.name, r.ttl, !r.led)
		if ctx.Err() != nil {
			return Lease{}, ctx.Err()
		}
		var wait time.Duration
		switch {
		case err != nil:
			r.log.Warn("leader campaign: acquire failed", zap.Error(err), zap.Duration("retry_in", failWait))
			wait, failWait = failWait, min(failWait*2, r.ttl/3)
		case ok:
			r.log.Info("leader role taken", zap.Int64("token", lease.Token))
			r.led = true
			return lease, nil
		default:
			failWait = 100 * time.Millisecond
			if !logged {
				r.log.Info("leader role held elsewhere; standing by", zap.String("holder", lease.Holder))
				logged = true
			}
			// Until the holder's lease expires (a little after, for the
			// clocks' rounding), unless it releases first.
			wait = min(max(lease.remaining+10*time.Millisecond, 10*time.Millisecond), r.ttl)
		}
		if conn = r.wait(ctx, conn, wait); ctx.Err() != nil {
			return Lease{}, ctx.Err()
		}
	}
}

// listen takes a connection from the pool and LISTENs for releases on it;
// nil when that fails (the campaign then polls).
func (r *leader) listen(ctx context.Context) *pgxpool.Conn {
	c, err := r.l.db.pool.Acquire(ctx)
	if err != nil {
		return nil
	}
	if _, err := c.Exec(ctx, "LISTEN "+releasedChannel); err != nil {
		c.Release()
		return nil
	}
	return c
}

// unlisten returns a listening connection to the pool, clean.
func (r *leader) unlisten(c *pgxpool.Conn) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Exec(ctx, "UNLISTEN "+releasedChannel); err != nil {
		// A connection in an unknown state must not serve anyone else.
		_ = c.Conn().Close(ctx)
	}
	c.Release()
}

// wait sleeps for d, or until a lease is released (any notification on
// the channel: one more Acquire is cheap), or ctx ends. It returns the
// connection to keep listening on: nil when it broke.
func (r *leader) wait(ctx context.Context, c *pgxpool.Conn, d time.Duration) *pgxpool.Conn {
	if c == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := c.Conn().PgConn().WaitForNotification(wctx)
	if err != nil && wctx.Err() == nil || c.Conn().IsClosed() {
		c.Release()
		return nil
	}
	return c
}

// lead runs fn while the lease is held. done is true when RunLeader must
// return err (ctx ended or fn returned on its own); false when the lease
// was lost and the campaign starts again.
func (r *leader) lead(ctx context.Context, lease Lease, fn func(context.Context) error) (done bool, err error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- fn(fctx) }()
	stop := func() { cancel(); <-result }

	renew := time.NewTicker(r.ttl / 3)
	defer renew.Stop()
	giveUp := time.NewTimer(time.Until(lease.validUntil) - r.margin())
	defer giveUp.Stop()
	for {
		select {
		case err := <-result:
			r.release(ctx, lease)
			if ctx.Err() != nil {
				return true, nil
			}
			r.log.Info("leader role ended by its function", zap.Error(err))
			return true, err
		case <-ctx.Done():
			stop()
			r.release(ctx, lease)
			return true, nil
		case <-giveUp.C:
			r.log.Warn("leader role given up: the lease could not be renewed in time", zap.Int64("token", lease.Token))
			stop()
			r.release(ctx, lease)
			return false, nil
		case <-renew.C:
			next, err := r.renew(ctx, lease)
			switch {
			case err == nil:
				lease = next
				giveUp.Reset(time.Until(lease.validUntil) - r.margin())
			case errors.Is(err, ErrFenced):
				r.log.Warn("leader role lost", zap.Error(err))
				stop()
				return false, nil
			case ctx.Err() == nil:
				r.log.Warn("leader lease renewal failed; retrying", zap.Error(err),
					zap.Duration("gives_up_in", time.Until(lease.validUntil)-r.margin()))
			}
		}
	}
}

// renew renews lease, waiting no longer than the moment the role must be
// given up.
func (r *leader) renew(ctx context.Context, lease Lease) (Lease, error) {
	rctx, cancel := context.WithDeadline(ctx, lease.validUntil.Add(-r.margin()))
	defer cancel()
	return r.l.Renew(rctx, lease)
}

// release gives the lease up (unless the handle keeps leases, as a crash
// would), even when ctx has ended.
func (r *leader) release(ctx context.Context, lease Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.l.Release(rctx, lease); err != nil {
		r.log.Warn("leader lease release failed; it expires by itself", zap.Error(err))
		return
	}
	r.log.Info("leader role released", zap.Int64("token", lease.Token), zap.Bool("kept", r.l.keep))
}
