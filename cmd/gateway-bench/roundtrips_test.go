package main

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// msg is a typed frontend message with a body of n bytes.
func msg(typ byte, n int) []byte {
	b := make([]byte, typedHeaderLen+n)
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:5], uint32(4+n))
	return b
}

// untyped is a startup-phase message with a code and n more bytes.
func untyped(code uint32, n int) []byte {
	b := make([]byte, startupHeaderLen+n)
	binary.BigEndian.PutUint32(b[0:4], uint32(startupHeaderLen+n))
	binary.BigEndian.PutUint32(b[4:8], code)
	return b
}

func TestFrontendCounter(t *testing.T) {
	const protocol3 = 196608
	join := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name   string
		stream []byte
		want   int64
	}{
		{"startup only", untyped(protocol3, 20), 0},
		{"simple queries", join(untyped(protocol3, 20), msg('Q', 6), msg('Q', 7)), 2},
		{"extended query: parse bind describe execute sync", join(untyped(protocol3, 9),
			msg('P', 30), msg('B', 12), msg('D', 2), msg('E', 5), msg('S', 0)), 1},
		{"batch of three: one sync", join(untyped(protocol3, 9),
			msg('B', 12), msg('E', 5), msg('B', 12), msg('E', 5), msg('B', 12), msg('E', 5), msg('S', 0)), 1},
		{"ssl request refused, then startup", join(untyped(sslRequestCode, 0), untyped(protocol3, 3), msg('S', 0)), 1},
		{"'S' and 'Q' inside bodies are not messages", join(untyped(protocol3, 0),
			append(msg('P', 0)[:1], append(binary.BigEndian.AppendUint32(nil, 4+4), 'S', 'Q', 'S', 'Q')...), msg('X', 0)), 0},
		{"terminate", join(untyped(protocol3, 0), msg('S', 0), msg('X', 0)), 1},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
			var trips atomic.Int64
			c := &frontendCounter{trips: &trips}
			for p := tt.stream; len(p) > 0; {
				k := min(chunk, len(p))
				if n, err := c.Write(p[:k]); n != k || err != nil {
					t.Fatalf("%s: Write = %d, %v", tt.name, n, err)
				}
				p = p[k:]
			}
			if got := trips.Load(); got != tt.want {
				t.Errorf("%s (chunks of %d): %d round trips, want %d", tt.name, chunk, got, tt.want)
			}
		}
	}
}

// TestProxyCountsRoundTrips runs pgx through the proxy against the real
// server: a prepared statement's execution is one round trip, a batch of
// three is one, a transaction with one statement is three.
func TestProxyCountsRoundTrips(t *testing.T) {
	p, url, err := startDBProxy(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer conn.Close(ctx)
	const q = "SELECT $1::int + 1"
	var n int
	if err := conn.QueryRow(ctx, q, 1).Scan(&n); err != nil || n != 2 { // prepares q: not counted below
		t.Fatalf("warm-up query = %d, %v", n, err)
	}
	steps := []struct {
		name string
		want int64
		fn   func() error
	}{
		{"prepared query", 1, func() error { return conn.QueryRow(ctx, q, 2).Scan(&n) }},
		{"batch of three", 1, func() error {
			b := &pgx.Batch{}
			for i := range 3 {
				b.Queue(q, i)
			}
			return conn.SendBatch(ctx, b).Close()
		}},
		{"transaction with one statement", 3, func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return tx.QueryRow(ctx, q, 3).Scan(&n) })
		}},
	}
	for _, s := range steps {
		before := p.RoundTrips()
		if err := s.fn(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := p.RoundTrips() - before; got != s.want {
			t.Errorf("%s: %d round trips, want %d", s.name, got, s.want)
		}
	}
}
