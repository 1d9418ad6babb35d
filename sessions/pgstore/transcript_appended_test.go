package pgstore

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// The entries a DB appends go into its cached chain decoded (a reply's
// Append after its commit, a turn's inputs with AppendLazyContext's read,
// which leaves them out), and the context that chain gives is the one a
// DB with no cache builds from the rows: through random turns with tool
// calls, messages whose lines decode otherwise, compactions, appends by a
// replica before and while this DB appends. A turn's reply leaves the cached chain at the transcript's
// last entry, with no read.
func TestCachedChainAppendedEqualsFresh(t *testing.T) {
	t.Parallel()
	db, url := openTest(t)
	ctx := ctxT(t)
	open := func() *DB {
		d, err := Open(ctx, Options{URL: url, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d
	}
	hdr := transcript.Header{SessionKey: "agent:main:main", AgentID: "main"}
	transcriptOf := func(d *DB) *TranscriptLog {
		tr, err := d.Transcript(sidA, hdr)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr, replica, fresh := transcriptOf(db), transcriptOf(open()), transcriptOf(open())
	freshContext := func() sessions.Context {
		t.Helper()
		fresh.db.chains.drop(sidA)
		c, err := fresh.Context(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	compare := func(step int, name string, got sessions.Context) {
		t.Helper()
		if d := cmp.Diff(freshContext(), got); d != "" {
			t.Fatalf("step %d (%s): the context differs from a fresh DB's (-fresh +got):\n%s", step, name, d)
		}
	}
	lastSeq := func() int64 {
		var seq int64
		if err := db.pool.QueryRow(ctx, `SELECT last_seq FROM transcript_heads WHERE session_id = $1`, sidA).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	input := func(i int) sessions.Message {
		m := sessions.UserText(fmt.Sprint("input ", i), time.Time{})
		m.Timestamp, m.RecordIDs, m.HistorySeq = 0, []string{fmt.Sprint("r", i)}, uint64(i)
		return m
	}
	call := func(i int) sessions.Message {
		return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{
			{Type: sessions.BlockToolCall, ID: fmt.Sprint("c", i), Name: "x", Arguments: json.RawMessage(` {"a": 1} `)}}}
	}
	result := func(i int) sessions.Message {
		return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: fmt.Sprint("c", i), ToolName: "x",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "out"}}}
	}
	// odd is a message whose line decodes to another message
	// (transcript.MessageRoundTrips): invalid UTF-8, pi's custom role.
	odd := func(i int) sessions.Message {
		if i%2 == 0 {
			return text(sessions.RoleUser, fmt.Sprint("bad \xff utf8 ", i))
		}
		return sessions.Message{Role: "custom", Content: []sessions.Content{{Type: sessions.BlockText, Text: fmt.Sprint("custom ", i)}}}
	}
	rng := rand.New(rand.NewPCG(21, 4))
	for step := range 60 {
		switch r := rng.IntN(10); {
		case r < 4: // a turn: inputs, maybe a tool round, the reply
			var inputs []sessions.Message
			for j := range 1 + rng.IntN(3) {
				inputs = append(inputs, input(step*10+j))
			}
			if rng.IntN(4) == 0 { // one whose line decodes otherwise
				inputs[len(inputs)-1] = odd(step)
			}
			_, got, err := tr.AppendLazyContext(ctx, inputs...)
			if err != nil {
				t.Fatal(err)
			}
			compare(step, "a turn's inputs", got)
			if rng.IntN(2) == 0 {
				if _, err := tr.Append(ctx, call(step)); err != nil {
					t.Fatal(err)
				}
				if _, got, err = tr.AppendLazyContext(ctx, result(step)); err != nil {
					t.Fatal(err)
				}
				compare(step, "a tool result", got)
			}
			reply, decodable := text(sessions.RoleAssistant, fmt.Sprint("reply ", step)), true
			if rng.IntN(4) == 0 { // left to the next read
				reply, decodable = odd(step+1), false
			}
			if _, err := tr.Append(ctx, reply); err != nil {
				t.Fatal(err)
			}
			cc := db.chains.get(sidA)
			if cc == nil {
				t.Fatalf("step %d: nothing cached after a turn", step)
			}
			cc.mu.Lock()
			last := cc.last
			cc.mu.Unlock()
			if want := lastSeq(); decodable && last != want {
				t.Fatalf("step %d: after the reply the cached chain ends at seq %d, the transcript at %d", step, last, want)
			}
		case r < 6: // a replica's append, then this DB's inputs
			if _, err := replica.Append(ctx, text(sessions.RoleAssistant, fmt.Sprint("replica ", step))); err != nil {
				t.Fatal(err)
			}
			_, got, err := tr.AppendLazyContext(ctx, input(step))
			if err != nil {
				t.Fatal(err)
			}
			compare(step, "inputs after a replica's append", got)
		case r < 8: // a replica's appends while this DB appends
			done := make(chan error, 1)
			go func() {
				_, err := replica.AppendLazy(ctx, text(sessions.RoleUser, fmt.Sprint("replica a ", step)), text(sessions.RoleAssistant, "b"))
				done <- err
			}()
			if _, _, err := tr.AppendLazyContext(ctx, input(step)); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Append(ctx, text(sessions.RoleAssistant, fmt.Sprint("reply ", step))); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			compare(step, "appends beside a replica's", got)
		case r < 9: // a compaction, by either, keeping from an entry of the context
			c, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			comp := sessions.Compaction{Summary: fmt.Sprint("summary ", step), TokensBefore: 10, TokensAfter: 2}
			if len(c.EntryIDs) > 0 {
				comp.FirstKeptEntryID = c.EntryIDs[rng.IntN(len(c.EntryIDs))]
			}
			by := tr
			if rng.IntN(2) == 0 {
				by = replica
			}
			if _, err := by.AppendCompaction(ctx, comp); err != nil {
				t.Fatal(err)
			}
			if got, err := tr.Context(ctx); err != nil {
				t.Fatal(err)
			} else {
				compare(step, "a compaction", got)
			}
		default: // a reply with nothing read since (its Append alone extends the chain)
			if _, err := tr.Append(ctx, text(sessions.RoleAssistant, fmt.Sprint("more ", step))); err != nil {
				t.Fatal(err)
			}
			got, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			compare(step, "a reply", got)
		}
	}
}
