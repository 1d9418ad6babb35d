package filestore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// indexDocs adds n messages of session sid to x's tail as the transcript
// append hook does (their offsets are made up: the test only counts), from
// offset *off on.
func indexDocs(x *searchIndex, sid string, n int, off *int64) {
	for i := range n {
		msg := sessions.UserText("apple banana w"+strconv.Itoa(i%500), time.UnixMilli(int64(i)))
		nodes := []*transcript.Node{{ID: "0000abcd", Off: *off, Kind: transcript.KindMessage, IsMessage: true, Msg: &msg}}
		*off += 100
		x.appended("main", sid, nodes, *off)
	}
}

// mergedDocs sums the messages the merges logged so far wrote.
func mergedDocs(logs *observer.ObservedLogs) int64 {
	var n int64
	for _, e := range logs.FilterMessage("search index: merged").All() {
		n += e.ContextMap()["docs"].(int64)
	}
	return n
}

// TestSearchMergeCostDoesNotGrowWithIndexAge: the daemon flushes the
// index's tail every minute under steady traffic and merges when it holds
// more than maxSegments segments. A merge rewrote every segment, the
// months of messages of the sessions that never reset (the default) with
// the last minutes', so each doc was rewritten once per nine flushes for
// as long as its session lived — a month of a busy bot's index rewritten
// every nine minutes. Merges now take the newest segments and an older one
// only when it is not much larger than them: the messages they rewrite
// stay proportional to the messages added, whatever the index's age.
func TestSearchMergeCostDoesNotGrowWithIndexAge(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	m := openTestManager(t, "", Options{Logger: zap.New(core)})
	ctx := context.Background()
	st := mustStore(t, m, "main")
	e, _ := mustBegin(t, st, dmKey(t, "main", "1"), sessions.Origin{Channel: "telegram"})
	x := m.search
	must(t, x.wait(ctx))
	var off int64
	const aged = 20000 // the index's past: one merged segment
	indexDocs(x, e.SessionID, aged, &off)
	must(t, x.flush())
	must(t, x.merge(ctx))
	before := mergedDocs(logs)
	const flushes, perFlush = 64, 50 // an hour of flushes
	for range flushes {
		indexDocs(x, e.SessionID, perFlush, &off)
		must(t, x.flush())
		must(t, x.mergeIfDue(ctx))
	}
	written := mergedDocs(logs) - before
	added := int64(flushes * perFlush)
	if written > 8*added {
		t.Errorf("merges rewrote %d messages to add %d to an index of %d: want at most %d (8 per message added)",
			written, added, aged, 8*added)
	}
	x.segMu.RLock()
	n, docs := len(x.segs), 0
	for _, s := range x.segs {
		docs += s.nDocs
	}
	x.segMu.RUnlock()
	if n > maxSegments || docs != aged+int(added) {
		t.Errorf("after the merges: %d segments holding %d messages, want at most %d holding %d", n, docs, maxSegments, aged+int(added))
	}
}

// TestSearchPartialMergeKeepsOlderSegmentsRight: a merge that keeps the
// older, larger segment keeps what it says of a reset session, so
// switching back to that session finds each of its messages once, before
// and after a restart.
func TestSearchPartialMergeKeepsOlderSegmentsRight(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	ctx := context.Background()
	x := m.search
	k1, k2 := dmKey(t, "main", "1"), dmKey(t, "main", "2")
	const past = 40
	var texts []string
	for i := range past {
		texts = append(texts, "kiwi old "+strconv.Itoa(i))
	}
	must(t, x.wait(ctx))
	old := sayTo(t, m, k1, texts...)
	must(t, x.flush())
	st := mustStore(t, m, "main")
	if _, err := st.Reset(ctx, k1, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	for i := range maxSegments + 1 {
		sayTo(t, m, k2, "kiwi new "+strconv.Itoa(i))
		must(t, x.flush())
		must(t, x.mergeIfDue(ctx))
	}
	x.segMu.RLock()
	n, first := len(x.segs), x.segs[0].nDocs
	x.segMu.RUnlock()
	if n > maxSegments || first != past {
		t.Fatalf("after the merges: %d segments, the oldest of %d messages: want at most %d, the oldest kept (%d)", n, first, maxSegments, past)
	}
	if got := found(t, m, "old"); len(got) != 0 {
		t.Errorf("the reset session's messages found: %v", got)
	}
	if _, err := st.Switch(ctx, k1, old.SessionID); err != nil {
		t.Fatal(err)
	}
	wantFound(t, m, "old", texts...)
	must(t, m.Close())
	m2 := openTestManager(t, dir, Options{})
	wantFound(t, m2, "old", texts...)
	if got := found(t, m2, "kiwi"); len(got) != past+maxSegments+1 {
		t.Errorf("after restart: %d kiwi messages, want %d", len(got), past+maxSegments+1)
	}
}
