package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestCrashLosesNothingRepeatsNothingPostgres is the crash test (see
// TestCrashLosesNothingRepeatsNothing) on the postgres backend: a fresh
// database, the daemon SIGKILLed under traffic at least 50 times, the
// fake Telegram's record checked the same way, and the transcripts read
// back through the storage seam.
func TestCrashLosesNothingRepeatsNothingPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	runCrash(t, crashBackend{storage: pgStorage(url), checkTranscripts: checkCrashTranscriptsSeam,
		inFlight: func(t *testing.T, records []string) (int, string) { return pgInFlight(t, url, records) }})
}

// pgInFlight is crashBackend.inFlight on the database at url, read
// directly (a Delivery handle would take over the records it lists):
// records without an outcome plus replies not completely delivered, and
// for each of records ("label=record id") its journal row (state, starts,
// failures, owner, reply and that reply's progress) or its absence.
func pgInFlight(t *testing.T, url string, records []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return -1, fmt.Sprintf("in flight: %v", err)
	}
	defer conn.Close(ctx)
	var pending int
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM delivery_records WHERE state = 'pending')
		+ (SELECT count(*) FROM delivery_replies WHERE sent < n_chunks)`).Scan(&pending)
	if err != nil {
		return -1, fmt.Sprintf("in flight: %v", err)
	}
	var b strings.Builder
	for _, lr := range records {
		label, id, _ := strings.Cut(lr, "=")
		var state, reply, owner, progress string
		var starts, failures int
		err := conn.QueryRow(ctx, `SELECT r.state, r.starts, r.failures, coalesce(r.reply, ''), r.owner,
				coalesce(p.sent::text || '/' || p.n_chunks::text, 'none')
			FROM delivery_records r LEFT JOIN delivery_replies p ON p.id = r.reply
			WHERE r.id = $1`, id).Scan(&state, &starts, &failures, &reply, &owner, &progress)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			fmt.Fprintf(&b, "%s: record %s not in the journal (never accepted)\n", label, id)
		case err != nil:
			fmt.Fprintf(&b, "%s: record %s: %v\n", label, id, err)
		default:
			fmt.Fprintf(&b, "%s: record %s state %s starts %d failures %d owner %q reply %q (sent %s)\n",
				label, id, state, starts, failures, owner, reply, progress)
		}
	}
	return pending, b.String()
}

// openPassive opens the backend of the config at cfgPath through the
// daemon's one opening path, passive (nothing repaired: the daemons have
// stopped); it closes with the test.
func openPassive(t *testing.T, cfgPath string) sessions.Backend {
	t.Helper()
	cfg, err := configs.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := gatewayd.OpenBackend(ctx, cfg, gatewayd.BackendOptions{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// checkCrashTranscriptsSeam is checkCrashTranscripts through the storage
// seam: it opens the backend of the config at cfgPath (passive: the daemon
// has stopped, nothing is repaired) and reads every session of every
// agent, current and archived.
func checkCrashTranscriptsSeam(t *testing.T, cfgPath, _ string) {
	t.Helper()
	b := openPassive(t, cfgPath)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agents, err := b.Agents()
	if err != nil {
		t.Fatal(err)
	}
	tally := newCrashTally(t)
	sessionsRead := 0
	for _, agent := range agents {
		st, err := b.Store(agent)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := st.List()
		if err != nil {
			t.Fatalf("agent %s: list: %v", agent, err)
		}
		for _, e := range entries {
			tr, err := st.TranscriptOf(e)
			if err != nil {
				t.Fatalf("session %s: %v", e.SessionID, err)
			}
			tallyHistory(ctx, t, tally, agent+"/"+e.SessionID, tr)
			sessionsRead++
			key, err := routing.Parse(e.SessionKey)
			if err != nil {
				t.Fatalf("session key %q: %v", e.SessionKey, err)
			}
			arch, err := st.Archived(key)
			if err != nil {
				t.Fatalf("session key %s: archived: %v", e.SessionKey, err)
			}
			for _, a := range arch {
				tr, err := st.Transcript(a.SessionID)
				if err != nil {
					t.Fatalf("archived session %s: %v", a.SessionID, err)
				}
				tallyHistory(ctx, t, tally, agent+"/"+a.SessionID+" (archived)", tr)
				sessionsRead++
			}
		}
	}
	if sessionsRead == 0 {
		t.Fatalf("no sessions in the %s backend (agents %v)", b.Kind(), agents)
	}
	tally.check()
	t.Logf("%d transcripts read through the %s backend, %d records", sessionsRead, b.Kind(), len(tally.records))
}

// tallyHistory counts the messages of one transcript's history.
func tallyHistory(ctx context.Context, t *testing.T, tally *crashTally, name string, tr sessions.TranscriptLog) {
	t.Helper()
	h, err := tr.History(ctx)
	if err != nil {
		t.Fatalf("transcript %s: history: %v", name, err)
	}
	prev := ""
	for i, m := range h {
		prev = tally.message(fmt.Sprintf("%s message %d", name, i+1), prev, m.Role, m.RecordIDs)
	}
}
