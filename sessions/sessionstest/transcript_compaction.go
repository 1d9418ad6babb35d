package sessionstest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// The compaction cases of TestTranscripts: what a compaction keeps, several
// in a row, and the refusal of a first kept entry off the chain.

// appendTurns appends n single messages named prefix<from>, prefix<from+1>
// ..., even numbers from the user, odd ones from the assistant, and returns
// their ids.
func (f *tfix) appendTurns(tr sessions.TranscriptLog, prefix string, from, n int) []string {
	f.t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		m := userMsg(i, fmt.Sprint(prefix, i))
		if i%2 == 1 {
			m = replyMsg(i, fmt.Sprint(prefix, i))
		}
		ids = append(ids, f.append(tr, m)...)
	}
	return ids
}

func testCompaction(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("compact")
	ids := f.appendTurns(tr, "m", 0, 10)
	// The summary is a user message: keeping from an assistant message
	// keeps it apart (a kept user message would be merged into it).
	comp := f.compact(tr, "S1", ids[7])
	c := f.context(tr)
	f.wantTexts("after a compaction", c.Messages, summaryText("S1"), "assistant: m7", "user: m8", "assistant: m9")
	if diff := cmp.Diff(append([]string{""}, ids[7:]...), c.EntryIDs); diff != "" {
		t.Errorf("EntryIDs after a compaction (-want +got):\n%s", diff)
	}
	if c.Summary != "S1" || c.LeafID != comp {
		t.Errorf("Summary %q LeafID %q, want S1 and the compaction %q", c.Summary, c.LeafID, comp)
	}
	after := f.append(tr, userMsg(20, "after"))
	c = f.context(tr)
	f.wantTexts("after a compaction and an append", c.Messages, summaryText("S1"), "assistant: m7",
		"user: m8", "assistant: m9", "user: after")
	if c.LeafID != after[0] {
		t.Errorf("LeafID %q, want %q", c.LeafID, after[0])
	}
	if n, pos := f.stats(tr); n != 11 || pos <= 0 {
		t.Errorf("Stats = %d messages, compaction at %d; want 11 and a position", n, pos)
	}

	// A compaction that keeps nothing: the summary and what follows.
	_, tr2 := f.session("compact-all")
	f.appendTurns(tr2, "x", 0, 3)
	f.compact(tr2, "all of it", "")
	f.wantTexts("after a compaction keeping nothing", f.context(tr2).Messages, summaryText("all of it"))
	f.append(tr2, userMsg(9, "next"))
	f.wantTexts("and a user message, merged into the summary", f.context(tr2).Messages, summaryText("all of it")+"\n\nnext")
}

func testCompactions(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("compactions")
	ids := f.appendTurns(tr, "m", 0, 6)
	f.compact(tr, "S1", ids[4])
	_, pos1 := f.stats(tr)
	ids = append(ids, f.appendTurns(tr, "m", 6, 4)...)
	f.compact(tr, "S2", ids[9])
	_, pos2 := f.stats(tr)
	f.append(tr, userMsg(30, "m10"))
	c := f.context(tr)
	f.wantTexts("only the latest compaction counts", c.Messages, summaryText("S2"), "assistant: m9", "user: m10")
	if c.Summary != "S2" || pos2 <= pos1 || pos1 <= 0 {
		t.Errorf("Summary %q, compaction positions %d then %d (want S2, growing)", c.Summary, pos1, pos2)
	}
	// A later compaction may keep entries from before an earlier one: the
	// kept part runs through it (its summary is not repeated).
	f.compact(tr, "S3", ids[1])
	c = f.context(tr)
	f.wantTexts("a compaction keeping entries before older ones", c.Messages, summaryText("S3"),
		"assistant: m1", "user: m2", "assistant: m3", "user: m4", "assistant: m5",
		"user: m6", "assistant: m7", "user: m8", "assistant: m9", "user: m10")
	if _, pos3 := f.stats(tr); pos3 <= pos2 {
		t.Errorf("compaction position %d after %d: want growing", pos3, pos2)
	}
}

func testCompactionRefused(t *testing.T, open StoreOpener) {
	f := newTFix(t, open)
	_, tr := f.session("refused")
	ids := f.appendTurns(tr, "m", 0, 3)
	_, other := f.session("elsewhere")
	foreign := f.append(other, userMsg(1, "not yours"))
	before := f.context(tr)
	for _, id := range []string{"deadbeef", foreign[0], "../" + ids[0], ids[0] + "\x00", "\xff\xfe"} {
		_, err := tr.AppendCompaction(f.ctx, sessions.Compaction{Summary: "S", FirstKeptEntryID: id})
		if !errors.Is(err, sessions.ErrNotInChain) || !strings.Contains(err.Error(), "is not in the chain") {
			t.Errorf("compaction keeping %q: error %v, want sessions.ErrNotInChain", id, err)
		}
	}
	if diff := cmp.Diff(before, f.context(tr)); diff != "" {
		t.Errorf("refused compactions changed the context (-before +after):\n%s", diff)
	}
	if n, pos := f.stats(tr); n != 3 || pos != 0 {
		t.Errorf("Stats after refused compactions = %d, %d; want 3, 0", n, pos)
	}
	_, empty := f.session("refused-empty")
	if _, err := empty.AppendCompaction(f.ctx, sessions.Compaction{Summary: "S", FirstKeptEntryID: "deadbeef"}); !errors.Is(err, sessions.ErrNotInChain) {
		t.Errorf("compaction of an empty transcript keeping an entry: %v", err)
	}
	f.compact(tr, "fine", ids[1])
	f.wantTexts("a valid compaction after refused ones", f.context(tr).Messages, summaryText("fine"), "assistant: m1", "user: m2")
}
