package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Per-session serialisation across replicas (issue 13, sessions.Turns).
// A turn for a session runs under the lease "session:<session key>"
// (leases, lease.go) with a fencing token; BeginTurn takes it in the same
// statement that checks per-session order, the turn's writes check the
// token (gateway_fence, migration 00006), a goroutine renews it every
// SessionLeaseTTL/3 and End releases it with a notification that wakes the
// replicas waiting for a session (WaitTurn). No database lock is held
// across a model call: only the lease row, for the length of each write.

// SessionLeaseTTL is how long a session's lease outlives its last renewal:
// a replica that stops (SIGSTOP, partition) loses its sessions to the
// others that long after its last renewal.
const SessionLeaseTTL = 10 * time.Second

// fenceCode is the SQLSTATE gateway_fence raises.
const fenceCode = "GWF01"

// SessionLease is the name of the lease a turn of sessionKey runs under
// (session keys name their agent: "agent:<id>:...").
func SessionLease(sessionKey string) string { return "session:" + sessionKey }

var _ sessions.Turns = (*Delivery)(nil)

// beginTurnSQL, in one statement: $3's records still this handle's,
// pending and unanswered (mine; one answered by a reply is that reply's
// to finish), those of them newer than a pending record outside $3 that
// is newer than the oldest of mine, another handle's or this one's (later:
// they wait for it; this handle's: taken over from a stopped replica, its
// batch queued behind this one, which a lane merged with the older part
// of the take-over and newer messages of its own), whether an
// older pending, unanswered record of the session is this handle's but
// not among $3 (behind: it must run first, and it waits behind this batch
// in this process's lane: taken over from a dead replica, or requeued), whether an older pending, unanswered record of the
// session belongs to another handle (gate: it runs first, so per-session
// order follows acceptance across replicas), whether an older record's
// reply is still to be sent by another handle (unsent: that handle, or
// whoever takes the reply over when it died, sends it first, so replies
// leave in acceptance order too; a reply this handle took over is ordered
// by dispatch, which sends it before the session's next reply), and,
// unless gated, the
// session's lease (take: as Leases.Acquire, and also from a holder that
// died: its owner lock, keyed by the owner id that ends the holder name,
// is gone, so a SIGKILLed replica's sessions are taken at once instead of
// when their leases expire; only while this handle's own lock is live and
// settled ($9, ownerLock.settled): after a cut every holder's lock is gone
// for a moment while its turn still runs).
var beginTurnSQL = `WITH ` + liveOwnersCTE + `, mine AS (
		SELECT id, seq FROM delivery_records
		WHERE id = ANY($3) AND owner = $4 AND state = 'pending' AND reply IS NULL),
	others AS (
		SELECT seq FROM delivery_records
		WHERE agent_id = $1 AND session_key = $2 AND state = 'pending' AND reply IS NULL AND owner <> $4),
	gate AS (
		SELECT EXISTS (SELECT 1 FROM delivery_records
				WHERE agent_id = $1 AND session_key = $2 AND state = 'pending' AND reply IS NULL AND owner = $4
					AND NOT (id = ANY($3)) AND seq < COALESCE((SELECT min(seq) FROM mine), $8)) AS behind,
			EXISTS (SELECT 1 FROM others WHERE seq < COALESCE((SELECT min(seq) FROM mine), $8)) AS blocked,
			LEAST((SELECT min(seq) FROM others WHERE seq > COALESCE((SELECT min(seq) FROM mine), $8)),
				(SELECT min(seq) FROM delivery_records
				WHERE agent_id = $1 AND session_key = $2 AND state = 'pending' AND reply IS NULL AND owner = $4
					AND NOT (id = ANY($3)) AND seq > COALESCE((SELECT min(seq) FROM mine), $8))) AS cut,
			EXISTS (SELECT 1 FROM delivery_records x JOIN delivery_replies r ON r.id = x.reply
				WHERE x.agent_id = $1 AND x.session_key = $2 AND x.state = 'pending' AND r.owner <> $4
					AND x.seq < COALESCE((SELECT min(seq) FROM mine), $8)) AS unsent),
	take AS (
		INSERT INTO leases AS l (name, holder, token, acquired_at, expires_at)
		SELECT $5, $6, 1, clock_timestamp(), clock_timestamp() + $7::bigint * interval '1 microsecond'
		WHERE NOT (SELECT blocked OR behind OR unsent FROM gate)
		` + leaseTakeover + `
			OR ($9 AND hashtextextended($4, 0) IN (SELECT k FROM live)
				AND hashtextextended(regexp_replace(l.holder, '^.*/', ''), 0) NOT IN (SELECT k FROM live))
		RETURNING token)
	SELECT COALESCE((SELECT array_agg(id ORDER BY seq) FROM mine), '{}'),
		COALESCE((SELECT array_agg(id) FROM mine WHERE seq > (SELECT cut FROM gate)), '{}'),
		(SELECT blocked OR unsent FROM gate), (SELECT behind FROM gate), (SELECT token FROM take)`

// BeginTurn implements sessions.Turns.
func (d *Delivery) BeginTurn(ctx context.Context, agentID, sessionKey string, ids []string) (*sessions.TurnHold, error) {
	ctx = withOp(ctx, OpBeginTurn)
	if d.isClosed.Load() {
		return nil, fmt.Errorf("pgstore: begin turn %s: %w", sessionKey, errClosed)
	}
	if d.solo {
		return &sessions.TurnHold{Held: true, End: func() {}}, nil
	}
	ids = validIDs(ids)
	if ids == nil {
		ids = []string{}
	}
	name := SessionLease(sessionKey)
	var (
		kept    []string
		later   []string
		blocked bool
		behind  bool
		token   *int64
	)
	// A reply Orphans took over answers older records than these: the
	// turn waits until it was sent (turns_adopted.go).
	d.taken.claim.RLock()
	defer d.taken.claim.RUnlock()
	if d.taken.waiting(sessionKey) {
		return &sessions.TurnHold{}, nil
	}
	sent := time.Now()
	d.waiters.ask(name) // a release heard from now on ends the WaitTurn after a refusal
	// Through the group commit (writegroup.go), waiting for its WAL flush
	// as a statement of its own did: a lease and its token must not be
	// lost to a crash of the server.
	settled := d.lock.settled()
	err := d.db.writes.do(ctx, &write{op: OpBeginTurn, key: rowKey("l", name), sync: true, fill: func(b *pgx.Batch) {
		b.Queue(beginTurnSQL, agentID, sessionKey, ids, d.owner, name, d.holder,
			d.turnTTL.Microseconds(), int64(math.MaxInt64), settled).QueryRow(func(row pgx.Row) error {
			return row.Scan(&kept, &later, &blocked, &behind, &token)
		})
	}})
	if err != nil {
		d.waiters.held(name)
		return nil, fmt.Errorf("pgstore: begin turn %s: %w", sessionKey, d.storageErr(err))
	}
	h := &sessions.TurnHold{Gone: gone(ids, kept), Later: later, Behind: behind, Order: kept}
	if token == nil {
		return h, nil
	}
	d.waiters.held(name)
	lease := Lease{Name: name, Holder: d.holder, Token: *token, TTL: d.turnTTL, validUntil: sent.Add(d.turnTTL)}
	t := d.startHold(lease)
	h.Held, h.Fence, h.Lost, h.End = true, sessions.Fence{Lease: name, Token: *token, Live: t.live}, t.lost, t.end
	return h, nil
}

// gone lists the ids not in kept, in their order.
func gone(ids, kept []string) []string {
	in := make(map[string]bool, len(kept))
	for _, id := range kept {
		in[id] = true
	}
	var out []string
	for _, id := range ids {
		if !in[id] {
			out = append(out, id)
		}
	}
	return out
}

// turnHold renews one held session lease until end.
type turnHold struct {
	d     *Delivery
	lost  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	lease Lease
	// until is lease.validUntil (with its monotonic reading), for live.
	until atomic.Pointer[time.Time]
}

// live reports whether the lease is surely held: renewed within its TTL
// by this process's clock, and not lost.
func (t *turnHold) live() bool {
	select {
	case <-t.lost:
		return false
	default:
	}
	return time.Now().Before(*t.until.Load())
}

func (d *Delivery) startHold(lease Lease) *turnHold {
	t := &turnHold{d: d, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), lease: lease}
	t.until.Store(&lease.validUntil)
	d.fences.Store(lease.Name, lease.Token)
	go t.renew()
	return t
}

// renew extends the lease every TTL/3. A refused renewal (the lease moved
// on) or one that has not succeeded when the lease may have run out by
// this process's clock marks it lost.
func (t *turnHold) renew() {
	defer close(t.done)
	tick := time.NewTicker(max(t.lease.TTL/3, time.Millisecond))
	defer tick.Stop()
	leases := t.d.db.Leases(t.d.holder)
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithDeadline(context.Background(), t.lease.validUntil)
		l, err := leases.Renew(ctx, t.lease)
		cancel()
		switch {
		case err == nil:
			t.lease = l
			until := l.validUntil
			t.until.Store(&until)
		case errors.Is(err, ErrFenced) || !time.Now().Before(t.lease.validUntil):
			t.d.log.Warn("session lease lost; the turn stops", zap.String("lease", t.lease.Name),
				zap.Int64("token", t.lease.Token), zap.Error(err))
			close(t.lost)
			<-t.stop
			return
		default:
			t.d.log.Warn("session lease renewal failed; retrying", zap.String("lease", t.lease.Name), zap.Error(err))
		}
	}
}

// end stops the renewals and releases the lease (notifying the waiters).
func (t *turnHold) end() {
	t.once.Do(func() {
		close(t.stop)
		<-t.done
		t.d.fences.CompareAndDelete(t.lease.Name, t.lease.Token)
		// The turn's sent marks do not wait for their commit (Sent):
		// they land before the release wakes another replica's turn of
		// the session, which would otherwise find this reply unsent and
		// wait again (no round trip: the marks are in flight already).
		t.d.db.writes.barrier()
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		if err := t.d.db.Leases(t.d.holder).Release(ctx, t.lease); err != nil {
			t.d.log.Warn("session lease release failed; it expires", zap.String("lease", t.lease.Name), zap.Error(err))
		}
	})
}

// WaitTurn implements sessions.Turns: it returns when sessionKey's lease
// is released (Release notifies releasedChannel with the lease's name),
// or was since the last BeginTurn for it was sent, after wait, or when ctx
// ends.
func (d *Delivery) WaitTurn(ctx context.Context, sessionKey string, wait time.Duration) {
	d.waiters.wait(ctx, d.db, SessionLease(sessionKey), wait)
}

// queueFence queues the check of fence f in batch b (before the writes it
// guards, in the same transaction).
func queueFence(b *pgx.Batch, f sessions.Fence) {
	b.Queue(`SELECT gateway_fence($1, $2)`, f.Lease, f.Token)
}

// fenced reports whether err is gateway_fence's refusal, and wraps it.
func fenced(err error) (error, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == fenceCode {
		return fmt.Errorf("%w: %w: %s", sessions.ErrFenced, ErrFenced, pe.Message), true
	}
	return err, false
}
