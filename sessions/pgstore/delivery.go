package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Timings of a Delivery's background loop.
const (
	// deliveryRetryEvery is how often marks waiting after a failed write
	// are retried (the files journal's journalRetryEvery).
	deliveryRetryEvery = time.Second
	// deliveryPruneEvery is how often completed ids past the retention
	// are forgotten.
	deliveryPruneEvery = time.Minute
	// deliveryOpTimeout bounds one write or read of a method without a
	// context.
	deliveryOpTimeout = 30 * time.Second
)

// DeliveryOptions configure DB.Delivery.
type DeliveryOptions struct {
	// Logger receives write failures and recoveries; nil means the DB's.
	Logger *zap.Logger
	// Now is the clock of acceptedAt, createdAt and done times; nil means
	// the DB's clock.
	Now func() time.Time
	// DoneKeep is how many completed ids are remembered whatever their age
	// (sessions.DoneKeep when 0).
	DoneKeep int
	// Lease is how long the records this handle accepts or claims stay
	// its own without a renewal (DefaultLease when 0); the loop renews
	// them every Lease/3 while the handle is open.
	Lease time.Duration
	// Holder prefixes this handle's id in the session leases it takes
	// (the replica's id, so gateway doctor can say whose they are).
	Holder string
	// TurnTTL is how long a session's lease outlives its last renewal
	// (SessionLeaseTTL when 0).
	TurnTTL time.Duration
	// Solo: no other process shares this journal (the daemon holds the
	// exclusive daemon lock), so BeginTurn grants every turn at once,
	// without a lease or a round trip; the lanes serialise the sessions.
	Solo bool
	// SyncMarks makes every mark wait for its WAL flush, as Accept does.
	// By default marks commit with synchronous_commit off: committed and
	// visible at once, surviving the death of this process, flushed by the
	// server's WAL writer within a few hundred milliseconds; only a crash
	// of the database server in that window loses them. That is the files
	// journal's guarantee for its marks (written to the kernel, fsynced
	// shortly after), at a fraction of the latency.
	SyncMarks bool
}

// DefaultLease is DeliveryOptions.Lease when unset: how long after its
// last renewal the rows of a replica that stopped (SIGSTOP, partition) are
// taken over by the others (issue 13: within 10 s; a replica that dies
// loses them at once, with its owner lock).
const DefaultLease = 10 * time.Second

// Delivery is the ingress journal, reply outbox and drafts of SPEC §3.7 on
// PostgreSQL, with the semantics of the files backend's filestore.Journal:
//
//   - Accept is durable when it returns (its transaction committed) and
//     reports a duplicate for an id that is pending or was completed
//     within sessions.DoneRetention or among the last DoneKeep completions.
//     AcceptDeferred is Accept for an adapter acknowledging a batch: the
//     record is committed at once, and its wait returns once it is durable,
//     one WAL flush serving the whole batch (lazy.go); AcceptDeferredAll
//     stores such a batch's records in one write, in their order (a batch
//     of one with its flush, so that its wait has nothing to do).
//   - Start, Fail, Abort, Done, Ready, Sent, Draft and DraftDone are marks:
//     each is one transaction, committed without waiting for its WAL flush
//     unless DeliveryOptions.SyncMarks (see there). A mark that cannot be written (the server
//     is gone, the disk is full) is kept in memory, in order with the marks
//     after it, and retried every second; the caller goes on as if it was
//     written. Health reports the failure until the marks are written
//     again, and Accept refuses new records meanwhile (an error wrapping
//     sessions.ErrStorage). A retried mark whose first try committed
//     without its answer arriving is applied twice (a Start counted
//     twice), the one difference from the files journal.
//   - Pending and Drafts leave out what this handle accepted or recorded
//     (the files journal leaves out what its process did), and what other
//     open handles hold: a handle opened after a crash sees everything the
//     dead one left, at once, and takes it over (Orphans).
//
// Ids must satisfy sessions.CheckID (UTF-8, no NUL): Accept, Ready and
// Draft refuse others with an error naming the id; the other text fields
// (agent, session key, entry and message ids) are refused the same way,
// since PostgreSQL text cannot hold them. Payloads and targets are JSON,
// stored compacted as the files journal writes them; chunks are stored as
// a JSON array, so any text survives.
//
// Each handle has an owner id; what it accepts or stores is its own. While
// the handle is open it holds an advisory lock keyed by that id on a
// connection of its own (delivery_owner.go); the server drops the lock
// when the process dies or Close ends it, and from then on Pending,
// Replies, Drafts and Orphans of any other handle take its rows over, each
// row by one of them (FOR UPDATE SKIP LOCKED). Rows are also leased
// (DeliveryOptions.Lease), by one owner row of the handle whatever it
// holds (delivery_owner_lease.go: renewed by its loop, released by
// Close): Claim and ClaimReplies hand over those whose lease ran out, and
// Orphans those of a live handle that stopped renewing. A Delivery is safe
// for concurrent use; Close stops its loop.
type Delivery struct {
	db       *DB
	log      *zap.Logger
	now      func() time.Time
	owner    string
	doneKeep int
	lease    time.Duration
	syncMark bool
	// lock is the owner's advisory lock: while it is held the handle's
	// rows are not taken over (delivery_owner.go).
	lock *ownerLock
	// ownerRow is set once a renewal wrote the owner row that leases the
	// handle's rows (delivery_owner_lease.go).
	ownerRow atomic.Bool
	// adopted is what Pending and Drafts took over.
	adopted adoption
	// taken orders the replies Orphans took over before their sessions'
	// next turns (turns_adopted.go).
	taken takenReplies
	// chunks holds the number of chunks of the replies this handle
	// stored or took over (reply id → int), until Sent marks the last:
	// that mark is not waited for (Sent).
	chunks sync.Map
	// fault, set only by tests, fails writes before they reach the server.
	fault func(op string) error

	// holder names this handle in the leases it takes (turns.go): the
	// replica's id and the owner id. turnTTL is its session leases' TTL.
	holder  string
	turnTTL time.Duration
	solo    bool
	// fences maps the session leases this handle holds for running turns
	// to their tokens: Ready checks its session's (turns.go).
	fences sync.Map
	// waiters wakes WaitTurn when a lease is released.
	waiters leaseWaiters

	// mu guards the fields below. While marks wait (an outage) it is held
	// across the writes that retry them, which keeps marks in order; in
	// normal operation writes run without it.
	mu      sync.Mutex
	backlog []mark // marks not yet written, in order
	failure error  // the last write failure; nil when healthy
	closed  bool

	// lateMu guards late, the riders (applyLater) whose write failed, on
	// their way to the backlog; it is never held across a write.
	lateMu sync.Mutex
	late   []lateMark

	// barrier makes AcceptDeferred's lazy commits durable.
	barrier walBarrier

	faulted  atomic.Bool // failure != nil || len(backlog) > 0
	isClosed atomic.Bool
	stop     chan struct{}
	done     chan struct{}

	writes, failures atomic.Int64
}

// lateMark is a rider that failed, with its error.
type lateMark struct {
	m   mark
	err error
}

// mark is one write of a Delivery: statements queued into one batch that
// runs them in one transaction, in one round trip.
type mark struct {
	op    string
	key   string // the write's rowKey
	queue func(b *pgx.Batch)
	// records are the pending records a fenced mark (a turn's reply)
	// settles: when the server refuses it after it waited in memory,
	// they are released for another run (releaseMark).
	records []string
}

var _ sessions.Delivery = (*Delivery)(nil)

// Delivery returns a new handle on the delivery state and starts its
// background loop (retries, pruning of completed ids); Close stops it.
func (db *DB) Delivery(o DeliveryOptions) *Delivery {
	log := o.Logger
	if log == nil {
		log = db.log.Named("delivery")
	}
	now := o.Now
	if now == nil {
		now = db.now
	}
	keep := o.DoneKeep
	if keep <= 0 {
		keep = sessions.DoneKeep
	}
	lease := o.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	d := &Delivery{db: db, log: log, now: now, owner: uuid.NewString(), doneKeep: keep, lease: lease, syncMark: o.SyncMarks,
		stop: make(chan struct{}), done: make(chan struct{})}
	d.barrier.db = db
	d.holder = d.owner
	if o.Holder != "" {
		d.holder = o.Holder + "/" + d.owner
	}
	d.solo = o.Solo
	d.turnTTL = o.TurnTTL
	if d.turnTTL <= 0 {
		d.turnTTL = SessionLeaseTTL
	}
	d.waiters.stop, d.waiters.log = d.stop, log
	d.lock = &ownerLock{db: db, owner: d.owner, log: log, now: now, grace: lease}
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	if err := d.lock.hold(ctx); err != nil {
		// Pending and Orphans refuse until the loop takes it.
		log.Warn("delivery owner lock not taken; retried every second", zap.Error(err))
	}
	// The lease of what it will hold, before it holds anything; accepts
	// and claims write it first while it is not written (ensureOwnerRow).
	if err := d.Renew(withOp(ctx, OpRenew)); err != nil {
		log.Warn("delivery owner lease not written; written before the first accept", zap.Error(err))
	}
	cancel()
	go d.loop()
	return d
}

// Owner is this handle's id in the owner columns.
func (d *Delivery) Owner() string { return d.owner }

// clock is d's time at PostgreSQL's resolution, in UTC.
func (d *Delivery) clock() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

// Close stops the loop and writes the marks still waiting; the error says
// how many could not be written. The DB stays open.
func (d *Delivery) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.isClosed.Store(true)
	d.mu.Unlock()
	close(d.stop)
	<-d.done
	d.waiters.end() // its listening connection is closed
	// Whatever happens below, the owner is dead once Close returns.
	defer d.lock.drop()
	d.db.writes.barrier() // the riders handed over are written or late
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
	if n := len(d.backlog); n > 0 {
		return fmt.Errorf("pgstore: delivery close: %d marks could not be written: %w", n, d.failure)
	}
	// What this handle held is claimable at once.
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpRenew), deliveryOpTimeout)
	defer cancel()
	// Its owner row for this release, its rows' own leases for the one
	// before (delivery_owner_lease.go).
	b := &pgx.Batch{}
	b.Queue(`UPDATE delivery_owners SET lease_until = $2 WHERE owner = $1`, d.owner, d.clock())
	b.Queue(releaseRecordsSQL, d.owner, d.clock())
	b.Queue(`UPDATE delivery_replies SET lease_until = $2 WHERE owner = $1`, d.owner, d.clock())
	if err := d.db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgstore: delivery close: release leases: %w", err)
	}
	// The owner dies, then running replicas are woken to take its rows.
	d.lock.drop()
	if _, err := d.db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, releasedDeliveryChannel, d.owner); err != nil {
		d.log.Warn("delivery close: notify replicas failed; they find the rows on their next poll", zap.Error(err))
	}
	return nil
}

// releaseRecordsSQL ends the lease of handle $1's pending records at $2.
const releaseRecordsSQL = `UPDATE delivery_records SET lease_until = $2 WHERE owner = $1 AND state = 'pending'`

// write runs m in one transaction.
func (d *Delivery) write(m mark) error {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), m.op), deliveryOpTimeout)
	defer cancel()
	if d.fault != nil {
		if err := d.fault(m.op); err != nil {
			d.failures.Add(1)
			return err
		}
	}
	// Through the group commit (writegroup.go): with the writes of other
	// turns, in one round trip. A failing statement aborts the mark's
	// transaction and its error is returned.
	err := d.db.writes.do(ctx, &write{op: m.op, key: m.key, fill: m.queue, sync: d.syncMark})
	if err != nil {
		d.failures.Add(1)
		return err
	}
	d.writes.Add(1)
	return nil
}

// apply writes m now, or after the marks already waiting. A failed write
// waits in the backlog (the caller goes on); only a closed handle refuses.
func (d *Delivery) apply(m mark) error {
	if d.isClosed.Load() {
		return fmt.Errorf("pgstore: delivery %s: %w", m.op, errClosed)
	}
	if !d.faulted.Load() {
		err := d.write(m)
		if err == nil {
			return nil
		}
		if permanent(err) {
			err, _ = fenced(err)
			return fmt.Errorf("pgstore: delivery %s: %w", m.op, err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.failLocked(m.op, err)
		d.backlog = append(d.backlog, m)
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("pgstore: delivery %s: %w", m.op, errClosed)
	}
	d.flushLocked()
	if len(d.backlog) > 0 {
		d.backlog = append(d.backlog, m)
		return nil
	}
	if err := d.write(m); err != nil {
		if permanent(err) {
			err, _ = fenced(err)
			return fmt.Errorf("pgstore: delivery %s: %w", m.op, err)
		}
		d.failLocked(m.op, err)
		d.backlog = append(d.backlog, m)
		return nil
	}
	d.healLocked()
	return nil
}

// applyLater writes m with the DB's next write (a rider of the group
// commit, writegroup.go), or with the next group of lazy writes at once
// when urgent, and returns at once. A write that fails waits in the
// backlog, after the marks written meanwhile; one the server refuses is
// logged and dropped. While marks wait (or with a fault hook) it is
// apply.
func (d *Delivery) applyLater(m mark, urgent bool) error {
	if d.isClosed.Load() {
		return fmt.Errorf("pgstore: delivery %s: %w", m.op, errClosed)
	}
	if d.faulted.Load() || d.fault != nil {
		return d.apply(m)
	}
	d.db.writes.ride(&write{op: m.op, key: m.key, fill: m.queue, sync: d.syncMark, urgent: urgent, done: func(err error) {
		if err == nil {
			d.writes.Add(1)
			return
		}
		d.failures.Add(1)
		if permanent(err) {
			d.log.Error("delivery mark refused by the server; dropped", zap.String("op", m.op), zap.Error(err))
			return
		}
		// Not d.mu: it is held across writes the group's goroutine,
		// which runs this, must commit.
		d.lateMu.Lock()
		d.late = append(d.late, lateMark{m: m, err: err})
		d.lateMu.Unlock()
		d.faulted.Store(true)
	}})
	return nil
}

// adoptLateLocked moves the riders whose write failed into the backlog.
func (d *Delivery) adoptLateLocked() {
	d.lateMu.Lock()
	late := d.late
	d.late = nil
	d.lateMu.Unlock()
	for _, l := range late {
		d.failLocked(l.m.op, l.err)
		d.backlog = append(d.backlog, l.m)
	}
}

// permanent reports whether the server refused a write for what it holds
// (data exception, integrity violation, syntax or schema error): retrying
// cannot succeed, so the write is not kept for a retry and does not make
// the handle unhealthy; its caller gets the error. Anything else (lost
// connection, disk full, read-only, shutdown, timeout) is an outage the
// retries outlast.
func permanent(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == fenceCode {
		return true // the turn's lease moved on: never retried
	}
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "42":
		return true
	}
	return false
}

// failLocked records a write failure.
func (d *Delivery) failLocked(op string, err error) {
	if d.failure == nil {
		d.log.Error("delivery write failed; marks kept in memory and retried", zap.String("op", op), zap.Error(err))
	}
	d.failure = fmt.Errorf("%w: pgstore: delivery %s on %s: %w", sessions.ErrStorage, op, d.db.target, err)
	d.faulted.Store(true)
}

// flushLocked writes waiting marks in order until one fails; when it
// wrote them all the handle is healthy again.
func (d *Delivery) flushLocked() {
	d.adoptLateLocked()
	if len(d.backlog) == 0 {
		return
	}
	for len(d.backlog) > 0 {
		m := d.backlog[0]
		if err := d.write(m); err != nil && !permanent(err) {
			d.failLocked(m.op, err)
			return
		} else if _, isFenced := fenced(err); isFenced && len(m.records) > 0 {
			// Its caller went on as if it were written (it waited in
			// memory); the records it settled must not stay pending under
			// this live owner, which forgot them.
			d.log.Warn("delivery mark refused: the session's lease moved on while it waited; its records are released to run again",
				zap.String("op", m.op), zap.Strings("records", m.records), zap.Error(err))
			d.backlog[0] = d.releaseMark(m.records)
			continue
		} else if err != nil {
			d.log.Error("delivery mark refused by the server; dropped", zap.String("op", m.op), zap.Error(err))
		}
		d.backlog[0] = mark{}
		d.backlog = d.backlog[1:]
	}
	d.healLocked()
}

// healLocked clears the failure after a successful write, unless marks
// still wait.
func (d *Delivery) healLocked() {
	if len(d.backlog) > 0 {
		return
	}
	if d.failure != nil {
		d.log.Info("delivery writable again")
	}
	d.failure = nil
	d.faulted.Store(false)
}

// Health is nil while every write succeeds; otherwise the failure
// (wrapping sessions.ErrStorage) that keeps marks waiting or refused the
// last Accept, until a write succeeds again.
func (d *Delivery) Health() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.adoptLateLocked()
	return d.failure
}

// loop retries waiting marks (probing the server when none waits) and
// forgets completed ids past the retention.
func (d *Delivery) loop() {
	defer close(d.done)
	retry := time.NewTicker(deliveryRetryEvery)
	defer retry.Stop()
	prune := time.NewTicker(deliveryPruneEvery)
	defer prune.Stop()
	renew := time.NewTicker(max(d.lease/3, time.Millisecond))
	defer renew.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-retry.C:
			if d.faulted.Load() {
				d.recover()
			}
			d.background("owner lock", d.lock.hold)
		case <-renew.C:
			d.background("lease renewal", d.Renew)
		case <-prune.C:
			d.background("prune", d.Prune)
		}
	}
}

// background runs one chore of the loop within deliveryOpTimeout.
func (d *Delivery) background(what string, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpRenew), deliveryOpTimeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		d.log.Warn("delivery "+what+" failed", zap.Error(err))
	}
}

// recover writes waiting marks; with none waiting (an Accept failed), a
// probe write proves the server takes writes again.
func (d *Delivery) recover() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.adoptLateLocked()
	if len(d.backlog) > 0 {
		d.flushLocked()
		return
	}
	probe := mark{op: "probe", queue: func(b *pgx.Batch) { b.Queue(`SELECT nextval('delivery_seq')`) }}
	if err := d.write(probe); err != nil {
		d.failLocked("probe", err)
		return
	}
	d.healLocked()
}

// Prune forgets completed ids older than sessions.DoneRetention that are
// not among the newest DoneKeep completions, and the owner rows of dead
// handles expired for a day that hold nothing (pruneOwnersSQL). The loop
// runs it every minute.
func (d *Delivery) Prune(ctx context.Context) error {
	cutoff := d.clock().Add(-sessions.DoneRetention)
	if _, err := d.db.pool.Exec(ctx, pruneDoneSQL, cutoff, d.doneKeep); err != nil {
		return fmt.Errorf("pgstore: delivery prune: %w", err)
	}
	return d.pruneOwners(ctx)
}

// pruneDoneSQL deletes the done records completed before $1 that are not
// among the newest $2 completions. It reads the records in completion
// order (done_seq, delivery_records_done) up to the first one completed
// at or after $1, where the rest of a day's are: the condition on done_at
// alone has no index, and an index scan bounded by the newest $2 read
// every record of the last day (DoneRetention, 500,000 a day for a busy
// bot) each minute to delete the few hundred that aged out
// (TestDeliveryPruneReadsOnlyWhatAged). A record completed out of clock
// order (replicas whose clocks differ) behind a younger one waits for it:
// it is remembered longer, never shorter.
const pruneDoneSQL = `DELETE FROM delivery_records
	WHERE state = 'done' AND done_at < $1
		AND done_seq <= (SELECT done_seq FROM delivery_records WHERE state = 'done'
			ORDER BY done_seq DESC OFFSET $2 LIMIT 1)
		AND done_seq < coalesce((SELECT done_seq FROM delivery_records WHERE state = 'done' AND done_at >= $1
			ORDER BY done_seq LIMIT 1), 9223372036854775807)`

// errClosed is returned by Accept on a closed handle.
var errClosed = errors.New("closed")
