package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"
)

// TestLeaseRace: 50 holders racing for one free lease, each on its own
// pool: exactly one wins, and every loser is told who holds it.
func TestLeaseRace(t *testing.T) {
	db, url := openTest(t)
	other, err := Open(context.Background(), Options{URL: url, MaxConns: 20, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := ctxT(t)
	for round := range 3 {
		name := fmt.Sprintf("race:%d", round)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			seen    = map[string]int{}
		)
		start := make(chan struct{})
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := db
				if i%2 == 1 {
					h = other
				}
				holder := fmt.Sprintf("replica-%d", i)
				<-start
				l, ok, err := h.Leases(holder).Acquire(ctx, name, time.Minute)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("%s: %v", holder, err)
					return
				}
				if ok {
					winners = append(winners, holder)
				}
				seen[l.Holder]++
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: winners %v, want exactly one", round, winners)
		}
		if seen[winners[0]] != 50 {
			t.Errorf("round %d: holders reported %v, want all 50 to name %s", round, seen, winners[0])
		}
		cur, ok, err := db.Leases("x").Held(ctx, name)
		if err != nil || !ok || cur.Holder != winners[0] || cur.Token != 1 {
			t.Errorf("round %d: Held = %+v %v %v, want %s with token 1", round, cur, ok, err, winners[0])
		}
	}
}

// TestLeaseExpiryTakeover: once a lease expires another holder takes it
// with a higher token, and the old holder's renewal is fenced.
func TestLeaseExpiryTakeover(t *testing.T) {
	db, _ := openTest(t)
	ctx := ctxT(t)
	a, b := db.Leases("a"), db.Leases("b")
	la, ok, err := a.Acquire(ctx, "role", 300*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("a: %v %v", ok, err)
	}
	if cur, ok, err := b.Acquire(ctx, "role", time.Second); err != nil || ok || cur.Holder != "a" || cur.Token != la.Token {
		t.Fatalf("b while a holds: %+v %v %v", cur, ok, err)
	}
	// Renewing keeps the token and moves the expiry.
	la2, err := a.Renew(ctx, la)
	if err != nil || la2.Token != la.Token || !la2.ExpiresAt.After(la.ExpiresAt) {
		t.Fatalf("renew: %+v %v (was %+v)", la2, err, la)
	}
	if !la2.ValidUntil().After(time.Now()) || la2.ValidUntil().After(time.Now().Add(300*time.Millisecond)) {
		t.Errorf("ValidUntil %v not within the ttl from now", la2.ValidUntil())
	}
	time.Sleep(400 * time.Millisecond)
	lb, ok, err := b.Acquire(ctx, "role", time.Minute)
	if err != nil || !ok || lb.Token <= la.Token || lb.Holder != "b" {
		t.Fatalf("b after expiry: %+v %v %v, want a token above %d", lb, ok, err, la.Token)
	}
	if _, err := a.Renew(ctx, la2); !errors.Is(err, ErrFenced) {
		t.Errorf("a's renewal after the take-over = %v, want ErrFenced", err)
	}
	// The old holder coming back takes nothing while b holds it...
	if cur, ok, err := a.Acquire(ctx, "role", time.Minute); err != nil || ok || cur.Holder != "b" {
		t.Errorf("a re-acquire: %+v %v %v", cur, ok, err)
	}
	// ...and b asking again keeps its token.
	if again, ok, err := b.Acquire(ctx, "role", time.Minute); err != nil || !ok || again.Token != lb.Token {
		t.Errorf("b re-acquire: %+v %v %v, want token %d kept", again, ok, err, lb.Token)
	}
}

// TestLeasePausedHolderFenced is the SIGSTOP case: a holder stops renewing,
// another takes its lease, and the paused holder's later write with its
// old token is refused inside its transaction and leaves nothing.
func TestLeasePausedHolderFenced(t *testing.T) {
	db, _ := openTest(t)
	ctx := ctxT(t)
	if _, err := db.pool.Exec(ctx, `CREATE TABLE writes (who text)`); err != nil {
		t.Fatal(err)
	}
	write := func(who string, l Lease) error {
		return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if err := CheckFence(ctx, tx, l.Name, l.Token); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO writes VALUES ($1)`, who)
			return err
		})
	}
	a, b := db.Leases("a"), db.Leases("b")
	la, _, err := a.Acquire(ctx, "session:1", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := write("a-live", la); err != nil {
		t.Fatalf("write while held: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a is paused past its expiry
	if err := write("a-expired", la); !errors.Is(err, ErrFenced) {
		t.Errorf("write after expiry = %v, want ErrFenced", err)
	}
	lb, ok, err := b.Acquire(ctx, "session:1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("b: %v %v", ok, err)
	}
	err = write("a-woke", la)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("paused holder's write = %v, want ErrFenced", err)
	}
	t.Logf("refused: %v", err)
	if err := write("b", lb); err != nil {
		t.Fatalf("new holder's write: %v", err)
	}
	if err := write("ghost", Lease{Name: "nobody", Token: 1}); !errors.Is(err, ErrFenced) {
		t.Errorf("write under a lease that does not exist = %v, want ErrFenced", err)
	}
	rows, _ := db.pool.Query(ctx, `SELECT who FROM writes ORDER BY who`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[a-live b]" {
		t.Errorf("writes = %v, want [a-live b]", got)
	}
}

// TestLeaseRelease: a released lease is taken by another holder at once,
// with a higher token; releasing a lease that moved on does nothing.
func TestLeaseRelease(t *testing.T) {
	db, _ := openTest(t)
	ctx := ctxT(t)
	a, b := db.Leases("a"), db.Leases("b")
	la, _, err := a.Acquire(ctx, "role", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, la); err != nil { // not b's: nothing happens
		t.Fatal(err)
	}
	if cur, ok, _ := b.Held(ctx, "role"); !ok || cur.Holder != "a" {
		t.Fatalf("after a foreign release: %+v %v", cur, ok)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Held(ctx, "role"); ok {
		t.Error("released lease still held")
	}
	lb, ok, err := b.Acquire(ctx, "role", time.Hour)
	if err != nil || !ok || lb.Token != la.Token+1 {
		t.Fatalf("b after release: %+v %v %v, want token %d", lb, ok, err, la.Token+1)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if cur, ok, _ := a.Held(ctx, "role"); !ok || cur.Holder != "b" {
		t.Errorf("a's stale release took b's lease: %+v %v", cur, ok)
	}
	// A handle WithoutRelease leaves the lease held, as a crash does.
	if err := b.WithoutRelease().Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if cur, ok, _ := a.Held(ctx, "role"); !ok || cur.Token != lb.Token {
		t.Errorf("WithoutRelease released: %+v %v", cur, ok)
	}
}

// TestLeaseClockIsTheDatabase: a replica whose clock runs an hour ahead
// cannot take a lease another replica holds (expiry is the server's time).
func TestLeaseClockIsTheDatabase(t *testing.T) {
	db, url := openTest(t)
	skewed, err := Open(context.Background(), Options{URL: url, Logger: zaptest.NewLogger(t),
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer skewed.Close()
	ctx := ctxT(t)
	if _, ok, err := db.Leases("a").Acquire(ctx, "role", 30*time.Second); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if cur, ok, err := skewed.Leases("b").Acquire(ctx, "role", 30*time.Second); err != nil || ok {
		t.Errorf("skewed replica acquired a held lease: %+v %v %v", cur, ok, err)
	}
}

// TestLeaseBadInput: what Acquire refuses, by name.
func TestLeaseBadInput(t *testing.T) {
	db, _ := openTest(t)
	ctx := ctxT(t)
	for _, c := range []struct {
		holder, name string
		ttl          time.Duration
		want         string
	}{
		{"", "role", time.Second, "empty holder"},
		{"a", "", time.Second, "empty lease name"},
		{"a", "role", 0, "ttl 0s"},
	} {
		_, _, err := db.Leases(c.holder).Acquire(ctx, c.name, c.ttl)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Acquire(%q, %q, %s) = %v, want an error with %q", c.holder, c.name, c.ttl, err, c.want)
		}
	}
}
