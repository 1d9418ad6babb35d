package sessionstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func testTranscriptEmpty(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	e, tr := f.session("empty")
	if c := f.context(tr); len(c.Messages) != 0 || len(c.EntryIDs) != 0 || c.LeafID != "" || c.Summary != "" {
		t.Errorf("Context of an empty transcript = %+v", c)
	}
	if h := f.history(tr); len(h) != 0 {
		t.Errorf("History of an empty transcript = %v", texts(h))
	}
	if n, c := f.stats(tr); n != 0 || c != 0 {
		t.Errorf("Stats of an empty transcript = %d, %d", n, c)
	}
	rs, err := tr.Records(f.ctx, []string{"r1"})
	if err != nil || len(rs.Consumed) != 0 || rs.Answered || rs.Superseded {
		t.Errorf("Records of an empty transcript = %+v, %v", rs, err)
	}
	byID, err := f.st.Transcript(e.SessionID)
	if err != nil {
		t.Fatalf("Transcript(%s): %v", e.SessionID, err)
	}
	if c := f.context(byID); len(c.Messages) != 0 {
		t.Errorf("Transcript(id) of an empty session has %d messages", len(c.Messages))
	}
}

func testAppendChain(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("chain")
	ids := f.append(tr, userMsg(1, "hello"))
	ids = append(ids, f.append(tr, replyMsg(2, "hi"), userMsg(3, "more"))...)
	priced := replyMsg(4, "ok")
	priced.Usage = &sessions.Usage{Input: 200, Output: 300, CacheRead: 1000, TotalTokens: 1500,
		Cost: sessions.Cost{Input: 0.0004, Output: 0.0024, CacheRead: 0.0005, Total: 0.0033}}
	ids = append(ids, f.append(tr, priced)...)
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		t.Fatalf("entry ids repeat: %v", ids)
	}
	c := f.context(tr)
	f.wantTexts("Context", c.Messages, "user: hello", "assistant: hi", "user: more", "assistant: ok")
	if diff := cmp.Diff(ids, c.EntryIDs); diff != "" {
		t.Errorf("Context.EntryIDs, one chain in append order (-appended +got):\n%s", diff)
	}
	if c.LeafID != ids[3] || c.Summary != "" {
		t.Errorf("LeafID %q Summary %q, want %q and none", c.LeafID, c.Summary, ids[3])
	}
	if c.Messages[0].Timestamp != at(1) || c.Messages[3].Timestamp != at(4) {
		t.Errorf("timestamps %d %d, want %d %d", c.Messages[0].Timestamp, c.Messages[3].Timestamp, at(1), at(4))
	}
	if m := c.Messages[1]; m.Usage == nil || m.StopReason != "stop" || m.Provider != "echo" {
		t.Errorf("assistant message as stored: usage %v stop %q provider %q", m.Usage, m.StopReason, m.Provider)
	}
	if m := c.Messages[3]; m.Usage == nil || *m.Usage != *priced.Usage {
		t.Errorf("priced assistant message: usage %+v, want %+v (pi's usage.cost round-trips)", m.Usage, priced.Usage)
	}
	if diff := cmp.Diff(c.Messages, f.history(tr)); diff != "" {
		t.Errorf("History differs from the context of an uncompacted chain (-context +history):\n%s", diff)
	}
	// A message without a timestamp gets the current time.
	f.append(tr, sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: "now"}}})
	if c := f.context(tr); c.Messages[4].Timestamp == 0 {
		t.Error("a message appended without a timestamp has none")
	}
	if n, comp := f.stats(tr); n != 5 || comp != 0 {
		t.Errorf("Stats = %d messages, compaction %d; want 5, 0", n, comp)
	}
}

func testCancelledAppend(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("cancelled")
	f.append(tr, userMsg(1, "kept"))
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if ids, err := tr.Append(ctx, replyMsg(2, "lost")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context = %v, %v; want context.Canceled", ids, err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "lost"}); !errors.Is(err, context.Canceled) {
		t.Errorf("AppendCompaction with a cancelled context: %v, want context.Canceled", err)
	}
	f.wantTexts("after cancelled appends", f.context(tr).Messages, "user: kept")
	if n, pos := f.stats(tr); n != 1 || pos != 0 {
		t.Errorf("Stats after cancelled appends = %d, %d; want 1, 0", n, pos)
	}
}

func testToolCalls(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("tools")
	f.append(tr, userMsg(1, "list"), callMsg(2, "c1", "c2"), resultMsg(3, "c2", "b"), resultMsg(4, "c1", "a"))
	f.append(tr, replyMsg(5, "done"), userMsg(6, "u1"))
	f.append(tr, userMsg(7, "u2"))
	c := f.context(tr)
	f.wantTexts("Context", c.Messages, "user: list", "assistant: ", "toolResult: a", "toolResult: b",
		"assistant: done", "user: u1\n\nu2")
	if got := string(c.Messages[1].Content[0].Arguments); got != `{"path":"a.go"}` {
		t.Errorf("tool arguments stored as %s, want compact JSON", got)
	}
	if m := c.Messages[1]; m.StopReason != "toolUse" {
		t.Errorf("stop reason of a tool call %q, want toolUse", m.StopReason)
	}
	// A call whose result never came gets a synthetic error result.
	f.append(tr, callMsg(8, "c3"))
	c = f.context(tr)
	last := c.Messages[len(c.Messages)-1]
	if last.Role != sessions.RoleToolResult || last.ToolCallID != "c3" || !last.IsError || c.EntryIDs[len(c.EntryIDs)-1] != "" {
		t.Errorf("unpaired call: last message %+v (entry %q), want a synthetic error result", last, c.EntryIDs[len(c.EntryIDs)-1])
	}
	if n, _ := f.stats(tr); n != 8 {
		t.Errorf("Stats = %d messages, want 8", n)
	}
}

func testTranscriptHandles(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	e, tr := f.session("handles")
	f.append(tr, userMsg(1, "one"), replyMsg(2, "two"))
	other := f.reopen()
	tr2 := f.of(other, e)
	if diff := cmp.Diff(f.context(tr), f.context(tr2)); diff != "" {
		t.Errorf("Context through a second handle (-first +second):\n%s", diff)
	}
	three := f.append(tr2, userMsg(3, "three"))
	c := f.context(tr)
	f.wantTexts("first handle after the second appended", c.Messages, "user: one", "assistant: two", "user: three")
	if c.LeafID != three[0] {
		t.Errorf("first handle's leaf %q, want the second's append %q", c.LeafID, three[0])
	}
	four := f.append(tr, replyMsg(4, "four"))
	byID, err := other.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	c2 := f.context(byID)
	f.wantTexts("Transcript(id) through the second handle", c2.Messages, "user: one", "assistant: two", "user: three", "assistant: four")
	if c2.LeafID != four[0] || c2.EntryIDs[2] != three[0] {
		t.Errorf("chain through handles: leaf %q ids %v", c2.LeafID, c2.EntryIDs)
	}
	if n, _ := f.stats(byID); n != 4 {
		t.Errorf("Stats through the second handle = %d, want 4", n)
	}
}

func testHistory(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("history")
	ids := f.appendTurns(tr, "m", 0, 6)
	f.compact(tr, "S1", ids[4])
	f.append(tr, userMsg(10, "m6"))
	f.compact(tr, "S2", "")
	f.append(tr, replyMsg(11, "m7"))
	f.wantTexts("History", f.history(tr), "user: m0", "assistant: m1", "user: m2", "assistant: m3", "user: m4",
		"assistant: m5", "user: m6", "assistant: m7")
	f.wantTexts("Context", f.context(tr).Messages, summaryText("S2"), "assistant: m7")
}

func withRecords(m sessions.Message, seq uint64, ids ...string) sessions.Message {
	m.RecordIDs, m.HistorySeq = ids, seq
	return m
}

func testRecords(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("records")
	check := func(what string, ids []string, want sessions.RecordsState) {
		t.Helper()
		got, err := tr.Records(f.ctx, ids)
		if err != nil {
			t.Fatalf("%s: Records: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Records(%v) (-want +got):\n%s", what, ids, diff)
		}
	}
	consumed := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	f.append(tr, withRecords(userMsg(1, "q1"), 5, "r1"))
	check("input appended", []string{"r1"}, sessions.RecordsState{Consumed: consumed("r1"), HistorySeq: 5})
	f.append(tr, callMsg(2, "c1"), resultMsg(3, "c1", "out"))
	check("a tool step", []string{"r1"}, sessions.RecordsState{Consumed: consumed("r1"), HistorySeq: 5})
	reply := f.append(tr, replyMsg(4, "answer one"))
	answered := sessions.RecordsState{Consumed: consumed("r1"), Answered: true, Answer: "answer one", EntryID: reply[0], HistorySeq: 5}
	check("answered", []string{"r1"}, answered)
	check("unknown record", []string{"r2"}, sessions.RecordsState{Consumed: consumed()})
	f.append(tr, withRecords(userMsg(5, "q2"), 9, "r2", "r3"))
	check("answered, then the next turn", []string{"r1"}, answered)
	check("two records of one message", []string{"r2", "r3", "rx"}, sessions.RecordsState{Consumed: consumed("r2", "r3"), HistorySeq: 9})
	f.append(tr, withRecords(userMsg(6, "q3"), 12, "r4", "r\x00"))
	check("superseded", []string{"r2"}, sessions.RecordsState{Consumed: consumed("r2"), Superseded: true, HistorySeq: 9})
	check("across turns", []string{"r2", "r4"}, sessions.RecordsState{Consumed: consumed("r2", "r4"), HistorySeq: 12})
	check("hostile record id", []string{"r\x00"}, sessions.RecordsState{Consumed: consumed("r\x00"), HistorySeq: 12})
	// A process that died after r1's reply was appended, and again after
	// the next turn took r2 and r3 (r4 came on): r1's turn is an earlier
	// one with its own answer.
	first := []sessions.RecordsTurn{{IDs: []string{"r1"}, Answered: true, Answer: "answer one", EntryID: reply[0]}}
	check("an answered turn, then a superseded one", []string{"r1", "r2", "r3"}, sessions.RecordsState{
		Consumed: consumed("r1", "r2", "r3"), Superseded: true, HistorySeq: 9, Earlier: first})
	check("an answered turn, then one cut short", []string{"r4", "r1"}, sessions.RecordsState{
		Consumed: consumed("r1", "r4"), HistorySeq: 12, Earlier: first})
	four := f.append(tr, replyMsg(7, "answer four"))
	f.append(tr, withRecords(userMsg(8, "q5"), 0, "r5"))
	check("three turns", []string{"r5", "r1", "r2", "r4"}, sessions.RecordsState{
		Consumed: consumed("r1", "r2", "r4", "r5"), HistorySeq: 12, Earlier: append(first,
			// r2's turn died before a reply; r4's took it along (as
			// "across turns" shows) and was answered.
			sessions.RecordsTurn{IDs: []string{"r2", "r4"}, Answered: true, Answer: "answer four", EntryID: four[0]})})
	check("a superseded turn, then a later one", []string{"r2", "r5"}, sessions.RecordsState{
		Consumed: consumed("r2", "r5"), HistorySeq: 9, Earlier: []sessions.RecordsTurn{{IDs: []string{"r2"}, Superseded: true}}})
	// A refusal with no text is an answer the caller must put in words.
	refusal := sessions.Message{Role: sessions.RoleAssistant, StopReason: sessions.StopRefusal, Provider: "echo", Model: "echo", Timestamp: at(9)}
	refused := f.append(tr, refusal)
	check("refused", []string{"r5"}, sessions.RecordsState{Consumed: consumed("r5"), Answered: true, EntryID: refused[0], Refused: true})
}

func testConcurrentOneSession(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("busy")
	const per = 5
	got := make([][]string, goroutines)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		for range per {
			ids, err := tr.Append(f.ctx, userMsg(g, "q"), replyMsg(g, "a"))
			if err != nil {
				errs[g] = err
				return
			}
			got[g] = append(got[g], ids...)
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c := f.context(tr)
	if len(c.Messages) != goroutines*per*2 {
		t.Fatalf("context holds %d messages, want %d (an append lost or off the chain)", len(c.Messages), goroutines*per*2)
	}
	pos := map[string]int{}
	for i, id := range c.EntryIDs {
		pos[id] = i
	}
	for g, ids := range got {
		for i, id := range ids {
			p, ok := pos[id]
			switch {
			case !ok:
				t.Errorf("goroutine %d: entry %s is not in the context", g, id)
			case i%2 == 1 && p != pos[ids[i-1]]+1:
				t.Errorf("goroutine %d: an append's two messages were split (%d, %d)", g, pos[ids[i-1]], p)
			case i > 0 && p < pos[ids[i-1]]:
				t.Errorf("goroutine %d: its appends are out of order", g)
			}
		}
	}
	if n, _ := f.stats(tr); n != goroutines*per*2 {
		t.Errorf("Stats = %d messages, want %d", n, goroutines*per*2)
	}
	if h := f.history(tr); len(h) != goroutines*per*2 {
		t.Errorf("History holds %d messages, want %d", len(h), goroutines*per*2)
	}
}

func testConcurrentSessions(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	const per = 10
	trs := make([]sessions.TranscriptLog, goroutines)
	got := make([][]string, goroutines)
	errs := make([]error, goroutines)
	parallel(goroutines, func(g int) {
		k, err := routing.PeerKey(f.st.AgentID(), "telegram", "", routing.Group, numbered("room", goroutines)[g])
		if err == nil {
			var e sessions.Entry
			if e, _, err = f.st.Begin(f.ctx, k, origin("room")); err == nil {
				trs[g], err = f.st.TranscriptOf(e)
			}
		}
		for i := 0; err == nil && i < per; i++ {
			m := userMsg(i, fmt.Sprint("m", i))
			if i%2 == 1 {
				m = replyMsg(i, fmt.Sprint("m", i))
			}
			var ids []string
			ids, err = trs[g].Append(f.ctx, m)
			got[g] = append(got[g], ids...)
		}
		errs[g] = err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for g, tr := range trs {
		c := f.context(tr)
		if diff := cmp.Diff(got[g], c.EntryIDs); diff != "" {
			t.Errorf("goroutine %d: context entries (-appended +got):\n%s", g, diff)
		}
		if n, _ := f.stats(tr); n != per {
			t.Errorf("goroutine %d: Stats = %d, want %d", g, n, per)
		}
	}
}

func testTranscriptHostile(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	for _, id := range []string{"", "../../etc/passwd", "x\x00y", "\xff\xfe", "ABCDEF00-0000-4000-8000-000000000000",
		strings.Repeat("a", 10000), "4f7c2a9e-0000-4000-8000-00000000000/"} {
		if tr, err := f.st.Transcript(id); err == nil {
			t.Errorf("Transcript(%q) = %v, want an error", clip(id), tr)
		}
	}
	e, tr := f.session("hostile")
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	f.append(tr, userMsg(1, "nul\x00byte"), replyMsg(2, "bad \xff\xfe utf8"), userMsg(3, big))
	bad := callMsg(4, "c1")
	bad.Content[0].Arguments = json.RawMessage(`{"unterminated`)
	if _, err := tr.Append(f.ctx, bad); err == nil {
		t.Error("a tool call with arguments that are not JSON was appended")
	}
	// What is stored, read through a second handle (the files backend's
	// cache keeps the text as given).
	c := f.context(f.of(f.reopen(), e))
	if len(c.Messages) != 3 {
		t.Fatalf("context holds %d messages, want 3", len(c.Messages))
	}
	if got := c.Messages[0].Text(); got != "nul\x00byte" {
		t.Errorf("NUL in a message came back as %q", got)
	}
	if got := c.Messages[1].Text(); got != "bad \ufffd\ufffd utf8" {
		t.Errorf("invalid UTF-8 came back as %q, want each bad byte as U+FFFD", got)
	}
	if got := c.Messages[2].Text(); got != big {
		t.Errorf("a 1 MiB message came back with %d bytes", len(got))
	}
	ids := c.EntryIDs
	f.compact(tr, "summary with \x00 and \xff", ids[1])
	c = f.context(f.of(f.reopen(), e))
	if c.Summary != "summary with \x00 and \ufffd" || len(c.Messages) != 3 {
		t.Errorf("hostile summary: %q with %d messages", c.Summary, len(c.Messages))
	}
	if n, _ := f.stats(tr); n != 3 {
		t.Errorf("Stats = %d messages, want 3", n)
	}
}

func testArchivedTranscript(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	e, tr := f.session("archived")
	f.append(tr, userMsg(1, "old question"), replyMsg(2, "old answer"))
	before := f.context(tr)
	k := keyOf(t, e)
	ne, err := f.st.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil || ne.SessionID == e.SessionID {
		t.Fatalf("Reset: %v (new id %s)", err, ne.SessionID)
	}
	for name, st := range map[string]sessions.AgentStore{"this handle": f.st, "a second handle": f.reopen()} {
		old, err := st.Transcript(e.SessionID)
		if err != nil {
			t.Fatalf("%s: Transcript(archived %s): %v", name, e.SessionID, err)
		}
		if diff := cmp.Diff(before, f.context(old)); diff != "" {
			t.Errorf("%s: context of the archived session (-before reset +after):\n%s", name, diff)
		}
		f.wantTexts(name+": history of the archived session", f.history(old), "user: old question", "assistant: old answer")
	}
	cur := f.of(f.st, ne)
	if c := f.context(cur); len(c.Messages) != 0 {
		t.Errorf("the new session starts with %d messages", len(c.Messages))
	}
	f.append(cur, userMsg(3, "new question"))
	if err := f.st.Delete(f.ctx, k); err != nil {
		t.Fatal(err)
	}
	deleted, err := f.st.Transcript(ne.SessionID)
	if err != nil {
		t.Fatalf("Transcript(deleted %s): %v", ne.SessionID, err)
	}
	f.wantTexts("history of a deleted session", f.history(deleted), "user: new question")
}
