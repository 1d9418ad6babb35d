package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestDoctorListsReplicas: with postgres, doctor names the config's
// replica id and lists the registered replicas (a live one holding a
// leader role and two session leases, counted; a stale one), a lease whose
// holder is not registered, and the lag of unclaimed ingress (a message of
// a dead owner, two hours old), in text and JSON.
func TestDoctorListsReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(id string) *pgstore.Backend {
		b, err := pgstore.OpenBackend(ctx, pgstore.BackendOptions{Options: pgstore.Options{URL: url}, ReplicaID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a := open("replica-a")
	lctx, stop := context.WithCancel(ctx)
	led, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- a.RunLeader(lctx, "telegram:main", func(ctx context.Context) error { close(led); <-ctx.Done(); return nil })
	}()
	defer func() { stop(); <-done }()
	<-led
	if _, ok, err := a.DB().Leases("ghost").Acquire(ctx, "discord:main", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, k := range []string{"1", "2"} { // counted, not listed
		if _, ok, err := a.DB().Leases("replica-a/owner-"+k).Acquire(ctx, pgstore.SessionLease("agent:main:telegram:direct:"+k), time.Minute); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		reps, err := a.Replicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(reps) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas %+v, want replica-a registered", reps)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// replica-b stopped beating an hour ago (it hangs, or crashed).
	if _, err := conn.Exec(ctx, `INSERT INTO replicas VALUES ('replica-b', 'elsewhere', 7, 'v0',
		now() - interval '2 hours', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	// A message accepted two hours ago by a replica that died: nobody
	// works on it. Its agent has a session (one without any would be a
	// problem of its own: delivery-unknown-agent).
	mk, err := routing.MainKey("main", "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.DB().Store("main", nil).Begin(ctx, mk, sessions.Origin{Channel: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO delivery_records (id, seq, agent_id, session_key, accepted_at, owner, lease_until)
		VALUES ('r1', nextval('delivery_seq'), 'main', 'agent:main:main', now() - interval '2 hours', 'dead-owner', now() - interval '2 hours')`); err != nil {
		t.Fatal(err)
	}

	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	cfg := writeConfig(t, state, "", "storage: {backend: postgres, postgres: {url: \""+url+"\", replicaId: replica-a}}\n")
	r := gw(t, cfg, "doctor").want(t, 0)
	for _, want := range []string{
		"storage: this config's replica id: replica-a\n",
		"storage: 2 replica(s) registered\n",
		"replica replica-a (this config): live, host ",
		"leases: telegram:main (token 1, ",
		" left); 2 session lease(s)\n",
		"replica replica-b: STALE, host ",
		"seen 1h0m",
		"; leases: none\n",
		"leases held by unregistered replica ghost: discord:main (token 1, ",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.Stdout)
		}
	}
	// The record was accepted two hours before the INSERT; the doctor runs
	// a moment later (seconds on a loaded machine), so its age is 2h0m and
	// a few seconds, never a minute more.
	unclaimed := regexp.MustCompile(`storage: unclaimed ingress: 1 message\(s\) whose owner died or stopped, the oldest accepted 2h0m[0-9]{1,2}s ago \(a running replica takes`)
	if !unclaimed.MatchString(r.Stdout) {
		t.Errorf("doctor output lacks %q:\n%s", unclaimed, r.Stdout)
	}
	t.Logf("doctor:\n%s", r.Stdout)
	if !strings.HasPrefix(r.Stdout, "storage: postgres at ") {
		t.Errorf("first line is not the storage line:\n%s", r.Stdout)
	}

	r = gw(t, cfg, "doctor", "--json").want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	s := rep.Storage
	if len(s.Replicas) != 2 || len(s.Leases) != 4 || s.Leases[3].Name != "telegram:main" || s.Leases[3].Holder != "replica-a" {
		t.Errorf("JSON storage section: replicas %+v leases %+v", s.Replicas, s.Leases)
	}
	if s.ReplicaID != "replica-a" || s.Ingress == nil || s.Ingress.Unclaimed != 1 || s.Ingress.OldestAge < 2*time.Hour {
		t.Errorf("JSON storage section: replica id %q, ingress %+v; want replica-a, one unclaimed 2 h old", s.ReplicaID, s.Ingress)
	}
}
