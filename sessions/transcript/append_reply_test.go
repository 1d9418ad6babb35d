package transcript

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// fakeReplyJournal records what ReadyWithLines was handed; refuse makes it
// fail (nothing stored).
type fakeReplyJournal struct {
	sessions.Delivery // not called
	refuse            error
	calls             []fakeReady
}

type fakeReady struct {
	reply sessions.Reply
	path  string
	off   int64
	lines string
}

func (j *fakeReplyJournal) ReadyWithLines(r sessions.Reply, path string, off int64, lines []byte) error {
	if j.refuse != nil {
		return j.refuse
	}
	j.calls = append(j.calls, fakeReady{reply: r, path: path, off: off, lines: string(lines)})
	return nil
}

// countSyncs opens files whose fsyncs add to n.
func countSyncs(n *atomic.Int64) func(*File) {
	return func(f *File) {
		f.open = func(p string, write bool) (handle, error) {
			h, err := openOS(p, write)
			if err != nil || h == nil {
				return h, err
			}
			return &syncFaultFile{File: h.(*os.File), next: func() error { n.Add(1); return nil }}, nil
		}
	}
}

func replyAheadFor(j *fakeReplyJournal) *sessions.ReplyAhead {
	return &sessions.ReplyAhead{Journal: j, Build: func(entryID string) (sessions.Reply, []sessions.UsageRow) {
		return sessions.Reply{ID: "rp-" + entryID, Records: []string{"r1"}, Chunks: []string{"hi"}, EntryID: entryID}, nil
	}}
}

// TestAnswerDurableThroughTheReplyJournal: once an fsync of the File set
// the durable offset, the append of an answer that carries a ReplyAhead
// to a ReplyJournal hands the journal every byte written since (the lazy
// inputs and the answer, exactly as in the file) with the reply, takes
// the reply and fsyncs nothing. The first such append (offset unknown)
// and one the journal refuses are fsynced, the reply left to the caller.
func TestAnswerDurableThroughTheReplyJournal(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	var syncs atomic.Int64
	tr := newTestTranscript(t, path, newMemLocker(), nil, countSyncs(&syncs))
	j := &fakeReplyJournal{}

	// A fresh File knows no durable offset: fsynced, not taken.
	ra := replyAheadFor(j)
	if _, err := tr.AppendLazy(ctx, user("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(sessions.WithReplyAhead(ctx, ra), assistantText("first answer")); err != nil {
		t.Fatal(err)
	}
	if _, ok := ra.Taken(); ok || len(j.calls) != 0 || syncs.Load() != 1 {
		t.Fatalf("first answer: taken %v, journal calls %d, fsyncs %d; want not taken, 0, 1", ok, len(j.calls), syncs.Load())
	}
	before := fileBytes(t, path)

	// Inputs appended lazily, then the answer with the reply.
	if _, err := tr.AppendLazy(ctx, user("again")); err != nil {
		t.Fatal(err)
	}
	ra = replyAheadFor(j)
	ids, err := tr.Append(sessions.WithReplyAhead(ctx, ra), assistantText("second answer"))
	if err != nil {
		t.Fatal(err)
	}
	rp, ok := ra.Taken()
	if !ok || len(j.calls) != 1 || syncs.Load() != 1 {
		t.Fatalf("second answer: taken %v, journal calls %d, fsyncs %d; want taken, 1, 1", ok, len(j.calls), syncs.Load())
	}
	after := fileBytes(t, path)
	c := j.calls[0]
	if c.path != path || c.off != int64(len(before)) || c.lines != string(after[len(before):]) {
		t.Errorf("journal got %s [%d, +%d) %q; want %s [%d, +%d) %q", c.path, c.off, len(c.lines), c.lines,
			path, len(before), len(after)-len(before), after[len(before):])
	}
	if rp.EntryID != ids[0] || c.reply.EntryID != ids[0] {
		t.Errorf("reply answers entry %q (journal: %q), want the append's %q", rp.EntryID, c.reply.EntryID, ids[0])
	}

	// The next answer's lines start where the journal's last ones ended.
	ra = replyAheadFor(j)
	if _, err := tr.Append(sessions.WithReplyAhead(ctx, ra), assistantText("third answer")); err != nil {
		t.Fatal(err)
	}
	if len(j.calls) != 2 || j.calls[1].off != int64(len(after)) {
		t.Errorf("third answer: %d journal calls, lines from %d; want 2, from %d", len(j.calls), j.calls[len(j.calls)-1].off, len(after))
	}

	// A journal that refuses: fsynced, not taken.
	j.refuse = errors.New("refused")
	ra = replyAheadFor(j)
	if _, err := tr.Append(sessions.WithReplyAhead(ctx, ra), assistantText("fourth answer")); err != nil {
		t.Fatal(err)
	}
	if _, ok := ra.Taken(); ok || syncs.Load() != 2 {
		t.Errorf("refused: taken %v, fsyncs %d; want not taken, 2", ok, syncs.Load())
	}

	// A plain Append still fsyncs.
	if _, err := tr.Append(ctx, assistantText("plain")); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() != 3 {
		t.Errorf("plain append: fsyncs %d, want 3", syncs.Load())
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
