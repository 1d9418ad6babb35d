package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// Fault tests of the built daemon on the postgres backend: a statement
// that times out behind a lock, and a server restart during a turn.

// startPgBinary writes the config of a daemon on database url (its
// statement timeout stmt) against the fakes and starts the built binary.
// The caller stops it.
func startPgBinary(t *testing.T, tg *telegramtest.Server, model *openaitest.Server, url, stmt string) *crashDaemon {
	t.Helper()
	base := t.TempDir()
	d := newCrashDaemon(t, base, filepath.Join(base, "state"), tg, model, "{mode: collect, debounce: 20ms}",
		fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q, maxConns: 8, statementTimeout: %s}}\n", url, stmt))
	d.start()
	return d
}

// daemonLog is everything the daemon's runs logged.
func (d *crashDaemon) daemonLog() string {
	d.t.Helper()
	files, err := filepath.Glob(filepath.Join(d.logs, "run-*.log"))
	if err != nil {
		d.t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			d.t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// repliesTo counts the bot's messages in chat that contain text.
func repliesTo(tg *telegramtest.Server, chat int64, text string) int {
	n := 0
	for _, s := range sentTo(tg, chat) {
		if strings.Contains(s.Text, text) {
			n++
		}
	}
	return n
}

// lockWaiters counts the backends of database name waiting for a lock.
func lockWaiters(ctx context.Context, conn *pgx.Conn, name string) (int, error) {
	var n int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`, name).Scan(&n)
	return n, err
}

// TestPostgresStatementTimeoutNeverWedges: with statementTimeout 1s, an
// operator's transaction holds the row of a session (its index entry, or
// its transcript head) for 6 s while a message for that session arrives.
// The turn's statement waits on the lock and times out; other sessions are
// answered meanwhile; once the lock is gone the message and the next one
// are each answered exactly once.
func TestPostgresStatementTimeoutNeverWedges(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lock locks the row of session (key, id) in tx.
		lock string
	}{
		{"entries", `SELECT 1 FROM entries WHERE agent_id = 'main' AND session_key = $1 AND session_id = $2 FOR UPDATE`},
		{"transcript_heads", `SELECT 1 FROM transcript_heads WHERE session_id = $2 AND $1 <> '' FOR UPDATE`},
	} {
		t.Run(tc.name, func(t *testing.T) { lockedRowCase(t, tc.lock, "1s") })
	}
}

// TestPostgresLockedRowHoldsUpNoOtherSession: with the default statement
// timeout (30 s), an operator's transaction holds a session's row for 6 s.
// The other session is answered meanwhile: the group commit's writes give
// up on a row lock after a second (lock_timeout), so the locked session's
// writes do not hold every other session's up for the statement timeout.
// Once the lock is gone the locked session's message is answered once.
func TestPostgresLockedRowHoldsUpNoOtherSession(t *testing.T) {
	lockedRowCase(t, `SELECT 1 FROM entries WHERE agent_id = 'main' AND session_key = $1 AND session_id = $2 FOR UPDATE`,
		"30s")
}

// How long lockedRowCase holds the row: until the other session is
// answered, and at least minLockHold (the locked turn's statement waits
// and gives up at least once: lock_timeout is 1 s), at most maxLockHold
// (below the default statement timeout, 30 s: a group commit that waited
// for the locked row as long as its statements may would not answer the
// other session in time). Not a fixed hold: under the lock a group that
// meets the locked write waits its 1 s lock timeout before the others go
// on, so on a loaded 2-core machine the other session's reply may come a
// few seconds later. (A fixed 3 s, then 6 s, failed there in stops 46, 50
// and 53; the cause was the daemon's: with statementTimeout 1s the
// statement timeout, not the lock timeout, ended the wait, and the group
// commit then tried each write again alone, the locked one waiting again —
// writegroup_commit.go's lockedWrite now takes either.)
const (
	minLockHold = 3 * time.Second
	maxLockHold = 20 * time.Second
)

// lockedRowCase runs a daemon of statement timeout stmt, holds the row
// lockSQL locks (see minLockHold) and checks that the other session is
// answered meanwhile, the locked one only once the lock is gone, and every
// message exactly once in the end.
func lockedRowCase(t *testing.T, lockSQL, stmt string) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	d := startPgBinary(t, tg, model, url, stmt)
	defer d.stop()
	const locked, other = int64(8100), int64(8200)
	tg.DM(locked, "hello a1")
	tg.DM(other, "hello b1")
	waitFor(t, 20*time.Second, "the first replies", func() bool {
		return repliesTo(tg, locked, "a1") == 1 && repliesTo(tg, other, "b1") == 1
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	key := fmt.Sprintf("agent:main:telegram:direct:%d", locked)
	var sessionID string
	if err := conn.QueryRow(ctx, `SELECT session_id FROM entries WHERE agent_id = 'main' AND session_key = $1`, key).Scan(&sessionID); err != nil {
		t.Fatalf("the session of %s: %v", key, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := tx.Exec(ctx, lockSQL, key, sessionID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("lock the session's row: %v (%d rows)", err, tag.RowsAffected())
	}
	lockedAt := time.Now()

	tg.DM(locked, "while locked a2")
	tg.DM(other, "meanwhile b2")
	// The turn reaches the locked row and waits for it.
	watch, err := pgx.Connect(ctx, pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	waitFor(t, 3*time.Second, "a statement of the daemon waiting for the locked row", func() bool {
		n, err := lockWaiters(ctx, watch, pgDatabaseName(t, url))
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	waitFor(t, maxLockHold-time.Since(lockedAt), "the other session's reply while the row is locked", func() bool {
		return repliesTo(tg, other, "b2") == 1
	})
	t.Logf("the other session answered %s after the row was locked", time.Since(lockedAt).Round(10*time.Millisecond))
	time.Sleep(time.Until(lockedAt.Add(minLockHold)))
	if n := repliesTo(tg, locked, "a2"); n != 0 {
		t.Fatalf("a2 answered %d times while its session's row was locked", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()

	waitFor(t, 30*time.Second, "the reply to the message that met the lock", func() bool {
		return repliesTo(tg, locked, "a2") > 0
	})
	t.Logf("a2 answered %s after the lock was released", time.Since(released).Round(10*time.Millisecond))
	tg.DM(locked, "after a3")
	waitFor(t, 20*time.Second, "the reply to the next message", func() bool { return repliesTo(tg, locked, "a3") > 0 })
	time.Sleep(500 * time.Millisecond) // late duplicates
	for _, c := range []struct {
		chat int64
		text string
	}{{locked, "a1"}, {locked, "a2"}, {locked, "a3"}, {other, "b1"}, {other, "b2"}} {
		if n := repliesTo(tg, c.chat, c.text); n != 1 {
			t.Errorf("%s in chat %d answered %d times, want 1", c.text, c.chat, n)
		}
	}
	for _, s := range tg.Sent() {
		if strings.HasPrefix(s.Text, "Sorry") {
			t.Errorf("a notice went to chat %d: %q", s.ChatID, s.Text)
		}
	}
	d.stop()
	if log := d.daemonLog(); !strings.Contains(log, "statement timeout") && !strings.Contains(log, "lock timeout") {
		t.Errorf("the daemon's log does not show the statement that timed out:\n%s", log)
	}
}

// TestPostgresRestartUnderBinary: the built daemon runs on PostgreSQL
// under steady traffic while the server "restarts" (every connection
// terminated, new ones refused for 8 s) during a turn: the model answers
// that turn while the database is gone. The daemon reconnects by itself:
// from the fake Telegram's record no message is lost and none answered
// twice, nothing is given up, and its log says the database was
// unreachable and then that it recovered.
func TestPostgresRestartUnderBinary(t *testing.T) {
	url := pgtest.NewDatabase(t)
	admin := pgtest.AdminURL(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		rep := openaitest.DefaultReply(n, r)
		if strings.Contains(r.LastUserText(), "slow") {
			rep.Hold = hold // answered once the outage has begun
		}
		return rep
	})
	d := startPgBinary(t, tg, model, url, "5s")
	defer d.stop()

	const total, chats = 80, 6
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range total {
			tg.DM(int64(9000+i%chats), fmt.Sprintf("msg n%03d", i))
			time.Sleep(50 * time.Millisecond)
		}
	}()
	const slowChat = int64(9100)
	tg.DM(slowChat, "slow n999")
	waitFor(t, 20*time.Second, "the model working on the slow turn", func() bool {
		_, ok := lastRequestFor(model, "slow n999")
		return ok
	})
	// 8 s: longer than the retries of a failed turn last (1 s + 4 s), so
	// work that took the outage for a failure would be given up.
	end := outage(t, admin, pgDatabaseName(t, url))
	time.Sleep(time.Second)
	close(hold) // the in-flight turn's answer arrives while the database is gone
	time.Sleep(7 * time.Second)
	end()
	<-sent

	answered := func() map[string]int {
		n := map[string]int{}
		for _, s := range tg.Sent() {
			for _, f := range strings.Fields(s.Text) {
				if len(f) == 4 && f[0] == 'n' {
					n[f]++
				}
			}
		}
		return n
	}
	waitFor(t, 60*time.Second, "every message answered after the outage", func() bool { return len(answered()) == total+1 })
	time.Sleep(500 * time.Millisecond) // late duplicates
	for m, c := range answered() {
		if c > 1 {
			t.Errorf("%s answered %d times", m, c)
		}
	}
	for _, s := range tg.Sent() {
		if strings.HasPrefix(s.Text, "Sorry") {
			t.Errorf("a message was given up in chat %d: %q", s.ChatID, s.Text)
		}
	}
	if d.runs != 1 || d.cmd.ProcessState != nil {
		t.Errorf("the daemon did not stay up through the outage (runs %d, state %v)", d.runs, d.cmd.ProcessState)
	}
	d.stop()
	log := d.daemonLog()
	for _, want := range []string{"delivery write failed; marks kept in memory and retried", "delivery writable again"} {
		if !strings.Contains(log, want) {
			t.Errorf("the daemon's log lacks %q:\n%s", want, log)
		}
	}
	if i, j := strings.Index(log, "delivery write failed"), strings.LastIndex(log, "delivery writable again"); i > j {
		t.Errorf("the daemon's log says the database recovered before it failed:\n%s", log)
	}
}
