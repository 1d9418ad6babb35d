package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leases with fencing tokens (issue 13). A lease is a named row with a
// holder, a token and an expiry. Acquire takes a free or expired lease and
// raises its token; the holder renews it before it expires; a write made
// on the lease's behalf checks, inside its transaction, that the token is
// still the current one (CheckFence), so a holder that paused (SIGSTOP, a
// long GC, a partition) and lost its lease to another replica cannot write
// with its old token. Every expiry is computed and compared by the
// database's clock (clock_timestamp()), never by a replica's: replicas
// with skewed clocks cannot both hold a lease.

// ErrFenced is wrapped by the errors of CheckFence and Renew when the lease
// moved on: it expired, or another holder took it (a higher token).
var ErrFenced = errors.New("lease lost")

// releasedChannel is the LISTEN/NOTIFY channel on which Release announces
// the name of a released lease, so a campaigner takes it at once.
const releasedChannel = "gateway_lease_released"

// Lease is a lease as its holder got it from Acquire or Renew.
type Lease struct {
	Name   string
	Holder string
	// Token is the fencing token: it grows with every new holder.
	Token int64
	// AcquiredAt and ExpiresAt are the database's times.
	AcquiredAt time.Time
	ExpiresAt  time.Time
	// TTL is the duration Acquire was asked for; Renew extends by it.
	TTL time.Duration
	// validUntil is this process's conservative view of the expiry: the
	// local (monotonic) time the statement was sent, plus TTL. The
	// database's expiry is never earlier.
	validUntil time.Time
	// remaining is, for a lease read with Held, how long it had to run by
	// the database's clock.
	remaining time.Duration
}

// ValidUntil is the local time until which the lease is surely held (its
// expiry seen from this process's monotonic clock, never later than the
// database's). Zero for a lease read with Held.
func (l Lease) ValidUntil() time.Time { return l.validUntil }

// Leases acquires, renews and releases leases for one holder (a replica
// id). It is safe for concurrent use.
type Leases struct {
	db     *DB
	holder string
	// keep, set by WithoutRelease, makes Release a no-op: a stop then
	// leaves the lease to expire, as a crash does.
	keep bool
}

// Leases returns the lease handle of holder (a replica's id), which must
// not be empty.
func (db *DB) Leases(holder string) *Leases { return &Leases{db: db, holder: holder} }

// Holder is the holder this handle acts for.
func (l *Leases) Holder() string { return l.holder }

// WithoutRelease returns a handle whose Release does nothing: stopping a
// leader through it leaves its lease to expire, as a crashed process does
// (failover tests).
func (l *Leases) WithoutRelease() *Leases {
	c := *l
	c.keep = true
	return &c
}

// validate checks what Acquire is given.
func (l *Leases) validate(name string, ttl time.Duration) error {
	switch {
	case l.holder == "":
		return errors.New("empty holder")
	case name == "":
		return errors.New("empty lease name")
	case ttl < time.Millisecond:
		return fmt.Errorf("lease ttl %s is below 1ms", ttl)
	}
	return nil
}

// takeoverClause is the conflict clause of an INSERT INTO leases AS l
// taking a lease: a new holder (or the same one after expiry) gets the
// next token, the holder that still holds it keeps its token and has its
// expiry extended while keep (an SQL condition) holds, and a lease held
// by another holder is taken only when it expired (the WHERE may be
// extended with more OR conditions).
func takeoverClause(keep string) string {
	kept := keep + ` AND l.holder = EXCLUDED.holder AND l.expires_at > clock_timestamp()`
	return `ON CONFLICT (name) DO UPDATE SET
			holder = EXCLUDED.holder,
			token = CASE WHEN ` + kept + ` THEN l.token ELSE l.token + 1 END,
			acquired_at = CASE WHEN ` + kept + ` THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
			expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder`
}

// leaseTakeover is takeoverClause for a holder that keeps its token.
var leaseTakeover = takeoverClause("TRUE")

// acquireTakeover is takeoverClause for Acquire, whose $4 (fresh) makes
// the holder that still holds the lease take the next token too: a new
// process under the same replica id fences whatever its predecessor still
// tries under the old one.
var acquireTakeover = takeoverClause("NOT $4::boolean")

// Acquire takes lease name for ttl if it is free, expired, or already this
// holder's. A new holder (or this holder after its lease expired) gets a
// token above every earlier one; a holder that still holds it keeps its
// token and has its expiry extended. When another holder has it, Acquire
// returns that holder's lease and false. Concurrent Acquires of any number
// of processes give the lease to exactly one.
func (l *Leases) Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, bool, error) {
	return l.acquire(ctx, name, ttl, false)
}

// AcquireFresh is Acquire for a holder that must not inherit what it held
// before (a process started under the replica id of one that died): a
// lease it still holds is taken with the next token, fencing anything its
// predecessor still tries under the old one.
func (l *Leases) AcquireFresh(ctx context.Context, name string, ttl time.Duration) (Lease, bool, error) {
	return l.acquire(ctx, name, ttl, true)
}

func (l *Leases) acquire(ctx context.Context, name string, ttl time.Duration, fresh bool) (Lease, bool, error) {
	ctx = withOp(ctx, OpLease)
	if err := l.validate(name, ttl); err != nil {
		return Lease{}, false, fmt.Errorf("pgstore: acquire lease %q: %w", name, err)
	}
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return Lease{}, false, fmt.Errorf("pgstore: acquire lease %q: %w", name, err)
	}
	// The clock starts once a connection is in hand: waiting for the pool
	// (or dialling) must not eat into the lease, and the database cannot
	// have started its ttl before the statement was sent.
	sent := time.Now()
	got := Lease{Name: name, Holder: l.holder, TTL: ttl}
	err = conn.QueryRow(ctx, `INSERT INTO leases AS l (name, holder, token, acquired_at, expires_at)
		VALUES ($1, $2, 1, clock_timestamp(), clock_timestamp() + $3::bigint * interval '1 microsecond')
		`+acquireTakeover+`
		RETURNING token, acquired_at, expires_at`, name, l.holder, ttl.Microseconds(), fresh).
		Scan(&got.Token, &got.AcquiredAt, &got.ExpiresAt)
	conn.Release()
	if err == nil {
		got.AcquiredAt, got.ExpiresAt = got.AcquiredAt.UTC(), got.ExpiresAt.UTC()
		got.validUntil = sent.Add(ttl)
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, false, fmt.Errorf("pgstore: acquire lease %q: %w", name, err)
	}
	// Another holder has it: say who, and until when.
	cur, ok, err := l.Held(ctx, name)
	if err != nil {
		return Lease{}, false, fmt.Errorf("pgstore: acquire lease %q: %w", name, err)
	}
	if !ok { // it expired in between: the next attempt takes it
		cur = Lease{Name: name}
	}
	return cur, false, nil
}

// Renew extends a lease this handle holds by its TTL from now. An error
// wrapping ErrFenced means the lease expired or another holder took it:
// the caller must stop acting on it. Other errors (the database did not
// answer) leave the lease as it was: it may still be held until
// ValidUntil.
func (l *Leases) Renew(ctx context.Context, lease Lease) (Lease, error) {
	ctx = withOp(ctx, OpLease)
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return lease, fmt.Errorf("pgstore: renew lease %q: %w", lease.Name, err)
	}
	defer conn.Release()
	sent := time.Now() // as in Acquire: after the pool's wait
	err = conn.QueryRow(ctx, `UPDATE leases SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()
		RETURNING expires_at`, lease.Name, l.holder, lease.Token, lease.TTL.Microseconds()).Scan(&lease.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease, fmt.Errorf("pgstore: renew lease %q token %d: %w: it expired or another holder took it", lease.Name, lease.Token, ErrFenced)
	}
	if err != nil {
		return lease, fmt.Errorf("pgstore: renew lease %q: %w", lease.Name, err)
	}
	lease.ExpiresAt = lease.ExpiresAt.UTC()
	lease.validUntil = sent.Add(lease.TTL)
	return lease, nil
}

// Release gives up a lease this handle holds, at once: it expires now and
// its release is announced (NOTIFY), so a waiting campaigner takes it
// without waiting for the expiry. Releasing a lease that already moved on
// does nothing. The token stays: the next holder's is higher.
func (l *Leases) Release(ctx context.Context, lease Lease) error {
	ctx = withOp(ctx, OpLease)
	if l.keep {
		return nil
	}
	// Through the group commit (writegroup.go): a turn's release shares
	// the round trip of other writes.
	err := l.db.writes.do(ctx, &write{op: OpLease, key: rowKey("l", lease.Name), fill: func(b *pgx.Batch) {
		b.Queue(`WITH r AS (
			UPDATE leases SET expires_at = clock_timestamp()
			WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()
			RETURNING name)
		SELECT pg_notify($4, name) FROM r`, lease.Name, l.holder, lease.Token, releasedChannel)
	}})
	if err != nil {
		return fmt.Errorf("pgstore: release lease %q: %w", lease.Name, err)
	}
	return nil
}

// Held returns the unexpired lease of name, whoever holds it, and false
// when nobody does.
func (l *Leases) Held(ctx context.Context, name string) (Lease, bool, error) {
	ctx = withOp(ctx, OpLease)
	got := Lease{Name: name}
	var left int64
	err := l.db.pool.QueryRow(ctx, `SELECT holder, token, acquired_at, expires_at,
			(extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint
		FROM leases WHERE name = $1 AND expires_at > clock_timestamp()`, name).
		Scan(&got.Holder, &got.Token, &got.AcquiredAt, &got.ExpiresAt, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("pgstore: lease %q: %w", name, err)
	}
	got.AcquiredAt, got.ExpiresAt = got.AcquiredAt.UTC(), got.ExpiresAt.UTC()
	got.remaining = time.Duration(left) * time.Microsecond
	return got, true, nil
}

// CheckFence verifies, inside the write transaction tx, that token is the
// current, unexpired token of lease name, and locks the lease's row
// (FOR SHARE) until tx ends, so no other holder can take the lease before
// the write commits. When the lease moved on it returns an error wrapping
// ErrFenced: the caller must roll back.
func CheckFence(ctx context.Context, tx pgx.Tx, name string, token int64) error {
	var (
		cur    int64
		holder string
		live   bool
	)
	err := tx.QueryRow(ctx, `SELECT token, holder, expires_at > clock_timestamp() FROM leases
		WHERE name = $1 FOR SHARE`, name).Scan(&cur, &holder, &live)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("pgstore: fence %q token %d: %w: no such lease", name, token, ErrFenced)
	case err != nil:
		return fmt.Errorf("pgstore: fence %q: %w", name, err)
	case cur != token:
		return fmt.Errorf("pgstore: fence %q token %d: %w: %s holds token %d", name, token, ErrFenced, holder, cur)
	case !live:
		return fmt.Errorf("pgstore: fence %q token %d: %w: it expired", name, token, ErrFenced)
	}
	return nil
}
