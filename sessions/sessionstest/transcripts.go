package sessionstest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// StoreOpener returns a new, empty agent store (or, with o.Share, a second
// handle on the storage of a store it returned earlier), with o's clock
// and reset policies. It releases what it opened when t ends.
type StoreOpener func(t *testing.T, o Options) sessions.AgentStore

// TestTranscripts runs the conformance suite of sessions.TranscriptLog
// (SPEC §3.4) against the stores open returns, each case in parallel on a
// store of its own. Both backends must give the same results for the same
// calls.
func TestTranscripts(t *testing.T, open StoreOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open StoreOpener)
	}{
		{"Empty", testTranscriptEmpty},
		{"AppendContinuesChain", testAppendChain},
		{"CancelledAppendWritesNothing", testCancelledAppend},
		{"ToolCallsAndMergedUsers", testToolCalls},
		{"DurableAcrossHandles", testTranscriptHandles},
		{"ContextAfterCompaction", testCompaction},
		{"ContextAfterSeveralCompactions", testCompactions},
		{"CompactionUnknownFirstKeptRefused", testCompactionRefused},
		{"HistoryIgnoresCompactions", testHistory},
		{"Records", testRecords},
		{"ConcurrentAppendsOneSession", testConcurrentOneSession},
		{"ConcurrentAppendsManySessions", testConcurrentSessions},
		{"HostileIDsAndContent", testTranscriptHostile},
		{"ArchivedReadableAfterReset", testArchivedTranscript},
		{"InheritParentFork", testFork},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// tfix is one transcript case's store.
type tfix struct {
	t    *testing.T
	open StoreOpener
	st   sessions.AgentStore
	clk  *clock
	ctx  context.Context
}

func newTFix(t *testing.T, open StoreOpener) *tfix {
	t.Helper()
	clk := &clock{t: t0}
	st := open(t, Options{Now: clk.Now})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &tfix{t: t, open: open, st: st, clk: clk, ctx: ctx}
}

// reopen is a second handle on f's storage.
func (f *tfix) reopen() sessions.AgentStore {
	f.t.Helper()
	return f.open(f.t, Options{Now: f.clk.Now, Share: f.st})
}

// session begins a group session for peer and opens its transcript.
func (f *tfix) session(peer string) (sessions.Entry, sessions.TranscriptLog) {
	f.t.Helper()
	k, err := routing.PeerKey(f.st.AgentID(), "telegram", "", routing.Group, peer)
	if err != nil {
		f.t.Fatal(err)
	}
	e, _, err := f.st.Begin(f.ctx, k, origin(peer))
	if err != nil {
		f.t.Fatalf("Begin(%s): %v", k, err)
	}
	return e, f.of(f.st, e)
}

func (f *tfix) of(st sessions.AgentStore, e sessions.Entry) sessions.TranscriptLog {
	f.t.Helper()
	tr, err := st.TranscriptOf(e)
	if err != nil {
		f.t.Fatalf("TranscriptOf(%s): %v", e.SessionID, err)
	}
	return tr
}

func (f *tfix) append(tr sessions.TranscriptLog, msgs ...sessions.Message) []string {
	f.t.Helper()
	ids, err := tr.Append(f.ctx, msgs...)
	if err != nil {
		f.t.Fatalf("Append: %v", err)
	}
	if len(ids) != len(msgs) {
		f.t.Fatalf("Append of %d messages returned %d ids", len(msgs), len(ids))
	}
	for _, id := range ids {
		if !entryID.MatchString(id) {
			f.t.Fatalf("entry id %q is not 8 hex characters", id)
		}
	}
	return ids
}

func (f *tfix) compact(tr sessions.TranscriptLog, summary, firstKept string) string {
	f.t.Helper()
	id, err := tr.AppendCompaction(f.ctx, sessions.Compaction{Summary: summary, FirstKeptEntryID: firstKept,
		TokensBefore: 80000, TokensAfter: 5000})
	if err != nil {
		f.t.Fatalf("AppendCompaction(%q): %v", firstKept, err)
	}
	return id
}

func (f *tfix) context(tr sessions.TranscriptLog) sessions.Context {
	f.t.Helper()
	c, err := tr.Context(f.ctx)
	if err != nil {
		f.t.Fatalf("Context: %v", err)
	}
	return c
}

func (f *tfix) history(tr sessions.TranscriptLog) []sessions.Message {
	f.t.Helper()
	h, err := tr.History(f.ctx)
	if err != nil {
		f.t.Fatalf("History: %v", err)
	}
	return h
}

func (f *tfix) stats(tr sessions.TranscriptLog) (int, int64) {
	f.t.Helper()
	n, c, err := tr.Stats(f.ctx)
	if err != nil {
		f.t.Fatalf("Stats: %v", err)
	}
	return n, c
}

var entryID = regexp.MustCompile(`^[0-9a-f]{8}$`)

// at is a message timestamp: t0 plus i seconds, in milliseconds.
func at(i int) int64 { return t0.Add(time.Duration(i) * time.Second).UnixMilli() }

func userMsg(i int, text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}},
		Timestamp: at(i)}
}

func replyMsg(i int, text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}},
		Provider: "echo", Model: "echo", Timestamp: at(i)}
}

func callMsg(i int, ids ...string) sessions.Message {
	m := sessions.Message{Role: sessions.RoleAssistant, Provider: "echo", Model: "echo", Timestamp: at(i)}
	for _, id := range ids {
		m.Content = append(m.Content, sessions.Content{Type: sessions.BlockToolCall, ID: id, Name: "read",
			Arguments: json.RawMessage(`{ "path" : "a.go" }`)})
	}
	return m
}

func resultMsg(i int, callID, text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: callID, ToolName: "read",
		Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Timestamp: at(i)}
}

// texts lists role: text of each message.
func texts(ms []sessions.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role + ": " + m.Text()
	}
	return out
}

func (f *tfix) wantTexts(what string, got []sessions.Message, want ...string) {
	f.t.Helper()
	if diff := cmp.Diff(want, texts(got)); diff != "" {
		f.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// summaryText is how a compaction summary reaches the model (pi's words).
func summaryText(s string) string {
	return "user: The conversation history before this point was compacted into the following summary:\n\n<summary>\n" +
		s + "\n</summary>"
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
