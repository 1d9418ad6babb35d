package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// checkFixture is a database as the daemon leaves it: sessions with
// transcripts (one compacted), a fresh session without one, an archived
// session and a pending message.
type checkFixture struct {
	db  *DB
	st  *Store
	ctx context.Context
	// chatty has 4 messages, compacted 2 and a compaction, fresh none.
	chatty, compacted, fresh routing.Key
	ids                      map[routing.Key]string // current session ids
}

func newCheckFixture(t *testing.T) *checkFixture {
	t.Helper()
	db, _ := openTest(t)
	f := &checkFixture{db: db, st: db.Store("main", nil), ctx: ctxT(t), ids: map[routing.Key]string{},
		chatty: mustKey(t, "main", "telegram", "1"), compacted: mustKey(t, "main", "telegram", "2"),
		fresh: mustKey(t, "main", "telegram", "3")}
	f.chat(t, f.chatty, 2)
	ids := f.chat(t, f.compacted, 1)
	tr := f.transcript(t, f.compacted)
	if _, err := tr.AppendCompaction(f.ctx, sessions.Compaction{Summary: "earlier", FirstKeptEntryID: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Patch(f.ctx, f.compacted, func(e *sessions.Entry) error { e.CompactionCount++; return nil }); err != nil {
		t.Fatal(err)
	}
	f.begin(t, f.fresh)
	reset := mustKey(t, "main", "telegram", "4")
	f.chat(t, reset, 1)
	if _, err := f.st.Reset(f.ctx, reset, sessions.ResetOptions{Manual: true, Reason: "cli"}); err != nil {
		t.Fatal(err)
	}
	f.exec(t, `INSERT INTO delivery_records (id, seq, agent_id, session_key, accepted_at)
		VALUES ('fresh', nextval('delivery_seq'), 'main', $1, now())`, f.chatty.String())
	return f
}

func (f *checkFixture) begin(t *testing.T, k routing.Key) sessions.Entry {
	t.Helper()
	e, _, err := f.st.Begin(f.ctx, k, sessions.Origin{Channel: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	f.ids[k] = e.SessionID
	return e
}

func (f *checkFixture) transcript(t *testing.T, k routing.Key) sessions.TranscriptLog {
	t.Helper()
	tr, err := f.st.Transcript(f.ids[k])
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// chat begins k's session and appends n exchanges, counted as the runner
// counts them; it returns the entry ids.
func (f *checkFixture) chat(t *testing.T, k routing.Key, n int) []string {
	t.Helper()
	f.begin(t, k)
	tr := f.transcript(t, k)
	var ids []string
	for i := range n {
		at := time.Now()
		got, err := tr.Append(f.ctx, sessions.UserText(fmt.Sprintf("question %d", i), at),
			sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "answer"}}, Timestamp: at.UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		f.st.AddCounters(k, sessions.Counters{Messages: 2})
		ids = append(ids, got...)
	}
	return ids
}

func (f *checkFixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.db.pool.Exec(f.ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// check runs Check once the counters queued are written.
func (f *checkFixture) check(t *testing.T) []sessions.Problem {
	t.Helper()
	if err := f.db.counters.wait(f.ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	ps, err := f.db.Check(f.ctx, sessions.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func (f *checkFixture) get(t *testing.T, k routing.Key) sessions.Entry {
	t.Helper()
	e, ok, err := f.st.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get %s: %v %v", k, ok, err)
	}
	return e
}

func codes(ps []sessions.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// TestCheckRepair: a database as the daemon leaves it has no problem;
// each kind of damage, made by hand, is found alone and with its code;
// Repair fixes the fixable ones so that Check finds nothing again (the
// others it leaves, saying they need a human, and the test undoes them).
func TestCheckRepair(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	if ps := f.check(t); len(ps) != 0 {
		t.Fatalf("a clean database: %+v", ps)
	}
	newest := newestMigration(t, f.db)
	cases := []struct {
		name    string
		damage  func(t *testing.T)
		code    string
		fixable bool
		undo    func(t *testing.T) // what Repair leaves
		after   func(t *testing.T) // what the repair must have done
	}{{
		name: "entry counts messages its transcript does not have",
		damage: func(t *testing.T) {
			f.exec(t, `UPDATE entries SET message_count = 3 WHERE session_id = $1`, f.ids[f.fresh])
		},
		code: sessions.CodeMissingTranscript, fixable: true,
		after: func(t *testing.T) {
			if e := f.get(t, f.fresh); e.MessageCount != 0 {
				t.Errorf("messageCount %d after the repair, want 0", e.MessageCount)
			}
		},
	}, {
		name: "entry counters behind the transcript",
		damage: func(t *testing.T) {
			f.exec(t, `UPDATE entries SET message_count = 1, compaction_count = 0 WHERE session_id = $1`, f.ids[f.compacted])
		},
		code: sessions.CodeCounterLag, fixable: true,
		after: func(t *testing.T) {
			if e := f.get(t, f.compacted); e.MessageCount != 2 || e.CompactionCount != 1 {
				t.Errorf("counters %d, %d after the repair, want 2 and 1", e.MessageCount, e.CompactionCount)
			}
		},
	}, {
		name: "entry counters ahead of the transcript",
		damage: func(t *testing.T) {
			f.exec(t, `UPDATE entries SET message_count = message_count + 7 WHERE session_id = $1`, f.ids[f.chatty])
		},
		code: sessions.CodeCounterLag, fixable: true,
		after: func(t *testing.T) {
			if e := f.get(t, f.chatty); e.MessageCount != 4 {
				t.Errorf("messageCount %d after the repair, want 4", e.MessageCount)
			}
		},
	}, {
		name: "head's message count wrong",
		damage: func(t *testing.T) {
			f.exec(t, `UPDATE transcript_heads SET messages = 0 WHERE session_id = $1`, f.ids[f.chatty])
		},
		code: sessions.CodeCounterLag, fixable: true,
		after: func(t *testing.T) {
			if n, _, err := f.transcript(t, f.chatty).Stats(f.ctx); err != nil || n != 4 {
				t.Errorf("Stats = %d, %v after the repair, want 4 messages", n, err)
			}
		},
	}, {
		name: "head row missing",
		damage: func(t *testing.T) {
			f.exec(t, `DELETE FROM transcript_heads WHERE session_id = $1`, f.ids[f.chatty])
		},
		code: sessions.CodeCounterLag, fixable: true,
		after: func(t *testing.T) {
			// The chain goes on where it was: the next append follows the
			// last answer and its seq is free.
			tr := f.transcript(t, f.chatty)
			if _, err := tr.Append(f.ctx, sessions.UserText("after the repair", time.Now())); err != nil {
				t.Fatal(err)
			}
			f.st.AddCounters(f.chatty, sessions.Counters{Messages: 1})
			c, err := tr.Context(f.ctx)
			if err != nil || len(c.Messages) != 5 || c.Messages[4].Text() != "after the repair" {
				t.Errorf("context after the repair and an append: %d messages, %v; want the 4 before and the new one", len(c.Messages), err)
			}
		},
	}, {
		name: "head row without transcript rows",
		damage: func(t *testing.T) {
			f.exec(t, `INSERT INTO transcript_heads (session_id, last_seq, leaf_id, prev_leaf_id, messages)
				VALUES ($1, 4, 'abcd0123', '', 2)`, uuid.NewString())
		},
		code: sessions.CodeCounterLag, fixable: true,
	}, {
		name: "transcript no entry names",
		damage: func(t *testing.T) {
			f.exec(t, `DELETE FROM entries WHERE session_id = $1`, f.ids[f.chatty])
		},
		code: sessions.CodeOrphanTranscript, fixable: true,
		after: func(t *testing.T) {
			a, err := f.st.Archived(f.chatty)
			if err != nil || len(a) != 1 {
				t.Fatalf("archived %+v, %v; want the recovered session", a, err)
			}
			if a[0].SessionID != f.ids[f.chatty] || a[0].Reason != RepairReason || a[0].MessageCount != 5 ||
				a[0].Title != "question 0" || a[0].Deleted {
				t.Errorf("recovered as %+v", a[0])
			}
			// It can be switched back to, with its messages.
			e, err := f.st.Switch(f.ctx, f.chatty, f.ids[f.chatty])
			if err != nil || e.MessageCount != 5 {
				t.Fatalf("switch back: %+v, %v", e, err)
			}
		},
	}, {
		name: "transcript without an entry or a header",
		damage: func(t *testing.T) {
			if _, err := f.db.Append(f.ctx, "00000000-0000-4000-8000-000000000001", TranscriptEntry{ID: "e1", Type: TypeMessage,
				Body: []byte(`{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"hi","timestamp":0}}`)}); err != nil {
				t.Fatal(err)
			}
		},
		code: sessions.CodeOrphanTranscript,
		undo: func(t *testing.T) {
			f.exec(t, `DELETE FROM transcript_entries WHERE session_id = '00000000-0000-4000-8000-000000000001'`)
			f.exec(t, `DELETE FROM transcript_heads WHERE session_id = '00000000-0000-4000-8000-000000000001'`)
		},
	}, {
		name: "transcript without its session header",
		damage: func(t *testing.T) {
			f.exec(t, `CREATE TABLE saved AS SELECT * FROM transcript_entries WHERE session_id = $1 AND type = 'session'`, f.ids[f.compacted])
			f.exec(t, `DELETE FROM transcript_entries WHERE session_id = $1 AND type = 'session'`, f.ids[f.compacted])
		},
		code: sessions.CodeMissingTranscript,
		undo: func(t *testing.T) {
			f.exec(t, `INSERT INTO transcript_entries SELECT * FROM saved`)
			f.exec(t, `DROP TABLE saved`)
		},
	}, {
		name: "message waiting for two days",
		damage: func(t *testing.T) {
			f.exec(t, `INSERT INTO delivery_records (id, seq, agent_id, session_key, accepted_at)
				VALUES ('old', nextval('delivery_seq'), 'main', $1, now() - interval '2 days')`, f.chatty.String())
		},
		code: sessions.CodeJournalBacklog,
		undo: func(t *testing.T) { f.exec(t, `DELETE FROM delivery_records WHERE id = 'old'`) },
	}, {
		name: "reply of an agent without sessions",
		damage: func(t *testing.T) {
			f.exec(t, `INSERT INTO delivery_replies (id, seq, records, agent_id, session_key, target, chunks, n_chunks, created_at)
				VALUES ('ghostly', nextval('delivery_seq'), '{}', 'ghost', 'agent:ghost:main', '{}', '["boo"]', 1, now() - interval '1 hour')`)
		},
		code: CodeDeliveryUnknownAgent,
		undo: func(t *testing.T) { f.exec(t, `DELETE FROM delivery_replies WHERE id = 'ghostly'`) },
	}, {
		name: "schema newer than this binary",
		damage: func(t *testing.T) {
			f.exec(t, `INSERT INTO gateway_schema_version (version_id, is_applied) VALUES ($1, true)`, newest+1)
		},
		code: CodeSchemaNewer,
		undo: func(t *testing.T) { f.exec(t, `DELETE FROM gateway_schema_version WHERE version_id = $1`, newest+1) },
	}, {
		name: "schema older than this binary",
		damage: func(t *testing.T) {
			f.exec(t, `CREATE TABLE saved AS SELECT * FROM gateway_schema_version WHERE version_id = $1`, newest)
			f.exec(t, `DELETE FROM gateway_schema_version WHERE version_id = $1`, newest)
		},
		code: CodeSchemaOlder,
		undo: func(t *testing.T) {
			f.exec(t, `INSERT INTO gateway_schema_version SELECT * FROM saved`)
			f.exec(t, `DROP TABLE saved`)
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.damage(t)
			ps := f.check(t)
			if got := codes(ps); !slices.Equal(got, []string{c.code}) {
				t.Fatalf("Check found %q, want [%s]: %+v", got, c.code, ps)
			}
			if p := ps[0]; p.Fixable != c.fixable || p.Message == "" || p.Path == "" || (p.Fixable && p.Fix == "") {
				t.Errorf("problem %+v: want fixable %v, a message, a locator and what the fix does", p, c.fixable)
			}
			errs := f.db.Repair(f.ctx, ps, sessions.CheckOptions{})
			switch {
			case c.fixable && errs[0] != nil:
				t.Fatalf("Repair: %v", errs[0])
			case !c.fixable && !errors.Is(errs[0], sessions.ErrNotFixable):
				t.Fatalf("Repair of a problem that needs a human: %v, want ErrNotFixable", errs[0])
			case !c.fixable:
				if again := f.check(t); !slices.Equal(codes(again), []string{c.code}) {
					t.Errorf("after Repair, Check found %q, want the problem left as it was", codes(again))
				}
				c.undo(t)
			}
			if ps := f.check(t); len(ps) != 0 {
				t.Fatalf("after the repair Check found %+v", ps)
			}
			if c.after != nil {
				c.after(t)
			}
			if ps := f.check(t); len(ps) != 0 {
				t.Fatalf("Check found %+v", ps)
			}
		})
	}
}

// newestMigration is the version of the newest embedded migration.
func newestMigration(t *testing.T, db *DB) int64 {
	t.Helper()
	p, done, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	srcs := p.ListSources()
	return srcs[len(srcs)-1].Version
}

// TestRepairRefusedWhileDaemonRuns: Repair changes nothing while a daemon
// holds the database, and says so naming it; Check still runs; once the
// daemon is gone the repair goes through.
func TestRepairRefusedWhileDaemonRuns(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	f.exec(t, `UPDATE entries SET message_count = 9 WHERE session_id = $1`, f.ids[f.chatty])
	hold, err := f.db.HoldDaemon(f.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(hold) }
	t.Cleanup(release) // before the pool closes
	ps := f.check(t)
	if !slices.Equal(codes(ps), []string{sessions.CodeCounterLag}) {
		t.Fatalf("Check beside a daemon found %q, want the counter lag", codes(ps))
	}
	errs := f.db.Repair(f.ctx, ps, sessions.CheckOptions{})
	if !errors.Is(errs[0], ErrInUse) || !strings.Contains(errs[0].Error(), "backend pid") {
		t.Errorf("Repair beside a daemon: %v, want ErrInUse naming the holder", errs[0])
	}
	if e := f.get(t, f.chatty); e.MessageCount != 9 {
		t.Errorf("messageCount %d after the refused repair, want 9 (unchanged)", e.MessageCount)
	}
	release()
	if errs := f.db.Repair(f.ctx, ps, sessions.CheckOptions{}); errs[0] != nil {
		t.Fatalf("Repair once the daemon stopped: %v", errs[0])
	}
	if ps := f.check(t); len(ps) != 0 {
		t.Errorf("after the repair: %+v", ps)
	}
}

// TestOrphanRepairFollowsKeyMoves: a transcript whose header names a key
// that was moved (a group upgraded to a supergroup: RenameKey, the move
// recorded under sessions.KeyMovesScope) is recovered as an archived
// session of the key it moved to, as the files backend's check does, not
// of the old key no chat uses any more.
func TestOrphanRepairFollowsKeyMoves(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	moved := mustKey(t, "main", "telegram", "-1002")
	if err := f.db.Cursors().SetCursor(f.ctx, sessions.KeyMovesScope, f.compacted.String(), moved.String()); err != nil {
		t.Fatal(err)
	}
	f.exec(t, `DELETE FROM entries WHERE session_id = $1`, f.ids[f.compacted])
	ps := f.check(t)
	if got := codes(ps); !slices.Equal(got, []string{sessions.CodeOrphanTranscript}) {
		t.Fatalf("Check found %q, want the orphan: %+v", got, ps)
	}
	if p := ps[0]; p.Key != moved.String() || !p.Fixable || !strings.Contains(p.Message, moved.String()) {
		t.Fatalf("orphan reported as %+v, want it fixable under the key it moved to, %s", p, moved)
	}
	if errs := f.db.Repair(f.ctx, ps, sessions.CheckOptions{}); errs[0] != nil {
		t.Fatalf("Repair: %v", errs[0])
	}
	a, err := f.st.Archived(moved)
	if err != nil || len(a) != 1 || a[0].SessionID != f.ids[f.compacted] || a[0].Reason != RepairReason {
		t.Fatalf("archived under the new key: %+v, %v; want the recovered session", a, err)
	}
	if old, _ := f.st.Archived(f.compacted); len(old) != 0 {
		t.Errorf("recovered under the old key too: %+v", old)
	}
	if ps := f.check(t); len(ps) != 0 {
		t.Fatalf("after the repair Check found %+v", ps)
	}
}

// TestCheckSettleSparesATurnInFlight: beside a running daemon, a turn's
// rows are committed before its counters (a later group), so for a moment
// the entry counts fewer messages than its rows. With Settle (gateway
// doctor's) a transcript written that recently is not reported as
// counter-lag; without it, or once the rows are older than Settle, it is.
func TestCheckSettleSparesATurnInFlight(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	f.exec(t, `UPDATE entries SET message_count = message_count - 2 WHERE session_id = $1`, f.ids[f.chatty])
	if err := f.db.counters.wait(f.ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	check := func(o sessions.CheckOptions) []string {
		t.Helper()
		ps, err := f.db.Check(f.ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return codes(ps)
	}
	now := time.Now()
	if got := check(sessions.CheckOptions{Now: now, Settle: sessions.DefaultSettle}); len(got) != 0 {
		t.Errorf("a turn written just now, with Settle: %q, want nothing", got)
	}
	if got := check(sessions.CheckOptions{Now: now}); !slices.Equal(got, []string{sessions.CodeCounterLag}) {
		t.Errorf("without Settle: %q, want the counter lag", got)
	}
	later := now.Add(2 * sessions.DefaultSettle)
	if got := check(sessions.CheckOptions{Now: later, Settle: sessions.DefaultSettle}); !slices.Equal(got, []string{sessions.CodeCounterLag}) {
		t.Errorf("rows older than Settle: %q, want the counter lag", got)
	}
}
