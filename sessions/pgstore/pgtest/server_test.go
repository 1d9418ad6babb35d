package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestServerRestart: a test's own server keeps its data across a stop and
// a start, and refuses connections while stopped.
func TestServerRestart(t *testing.T) {
	s := StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := s.URL("postgres")
	if err := exec(ctx, url, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	s.Start()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("after the restart: %v\n%s", err, s.Log())
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 42 {
		t.Fatalf("kept row = %d, %v", v, err)
	}
}
