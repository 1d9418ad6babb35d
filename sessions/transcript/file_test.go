package transcript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

var idRe = regexp.MustCompile(`^[0-9a-f]{8}$`)

func TestTranscriptAppendAndReload(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)

	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 0 || c.LeafID != "" {
		t.Fatalf("Context of a missing file = %+v, %v; want empty", c, err)
	}
	ids1, err := tr.Append(ctx, user("list files"))
	if err != nil {
		t.Fatal(err)
	}
	ids2, err := tr.Append(ctx, assistantCalls("call_1"), toolResult("call_1", "a.go"), assistantText("one file: a.go"))
	if err != nil {
		t.Fatal(err)
	}
	ids := append(ids1, ids2...)
	if len(ids) != 4 {
		t.Fatalf("got %d ids, want 4", len(ids))
	}

	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("file has %d lines, want header + 4", len(lines))
	}
	h := lines[0]
	for k, want := range map[string]any{"type": "session", "version": 3.0, "id": "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f",
		"cwd": "/var/lib/gateway", "sessionKey": "agent:main:telegram:direct:42", "agentId": "main"} {
		if h[k] != want {
			t.Errorf("header %s = %v, want %v", k, h[k], want)
		}
	}
	var parent any
	seen := map[string]bool{}
	for i, l := range lines[1:] {
		id, _ := l["id"].(string)
		if !idRe.MatchString(id) || seen[id] {
			t.Errorf("line %d: id %q is not 8 unique hex chars", i+2, id)
		}
		seen[id] = true
		if id != ids[i] {
			t.Errorf("line %d: id %q, Append returned %q", i+2, id, ids[i])
		}
		if l["parentId"] != parent {
			t.Errorf("line %d: parentId %v, want %v", i+2, l["parentId"], parent)
		}
		if _, ok := l["timestamp"].(string); !ok || l["type"] != "message" {
			t.Errorf("line %d: %v", i+2, l)
		}
		parent = id
	}
	if tr := lines[3]["message"].(map[string]any); tr["isError"] != false {
		t.Errorf("toolResult isError = %v, want false written explicitly", tr["isError"])
	}

	cached, err := tr.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:list files", "assistant:call(call_1)", "result(call_1)=a.go", "assistant:one file: a.go"}
	if d := cmp.Diff(want, summarize(cached.Messages)); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if d := cmp.Diff(ids, cached.EntryIDs); d != "" {
		t.Errorf("entry ids (-want +got):\n%s", d)
	}
	if cached.LeafID != ids[3] {
		t.Errorf("LeafID = %q, want %q", cached.LeafID, ids[3])
	}

	// A fresh reader parses the file into exactly the cached context.
	loaded, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cached, loaded); d != "" {
		t.Errorf("reloaded context differs from the cached one (-cached +loaded):\n%s", d)
	}
}

func TestTranscriptWrittenGolden(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil, withClock(fixedClock()), withRand(seqRand()))
	if _, err := tr.Append(ctx, user("hello <world> & friends")); err != nil {
		t.Fatal(err)
	}
	msgs := []sessions.Message{
		assistantCalls("call_1"),
		toolResult("call_1", "ok"),
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockThinking, Thinking: "hmm"}, {Type: sessions.BlockText, Text: "done"}},
			Provider: "anthropic", Model: "claude", Usage: &sessions.Usage{Input: 10, Output: 2, TotalTokens: 12}, StopReason: "stop", Timestamp: 1777636800000},
	}
	ids, err := tr.Append(ctx, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "greeted", FirstKeptEntryID: ids[0], TokensBefore: 900, TokensAfter: 100}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "written.golden.jsonl", got)
}

func TestAppendCompactionRejectsUnknownFirstKept(t *testing.T) {
	ctx := context.Background()
	tr := newTestTranscript(t, tempPath(t), newMemLocker(), nil)
	if _, err := tr.Append(ctx, user("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "S", FirstKeptEntryID: "nothere1"}); err == nil {
		t.Fatal("AppendCompaction with an unknown firstKeptEntryId succeeded")
	}
	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 1 || c.Summary != "" {
		t.Errorf("context after a rejected compaction: %v, %v", summarize(c.Messages), err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	a := newTestTranscript(t, path, lock, nil)
	b := newTestTranscript(t, path, lock, nil) // a second handle, as another process would have
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := a
			if w%2 == 1 {
				tr = b
			}
			for i := range each {
				if _, err := tr.Append(ctx, user(fmt.Sprintf("w%d-%d", w, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != workers*each+1 {
		t.Fatalf("%d lines, want %d", len(lines), workers*each+1)
	}
	seen := map[any]bool{}
	var parent any
	for i, l := range lines[1:] {
		if seen[l["id"]] || l["parentId"] != parent {
			t.Fatalf("line %d: id %v (dup %v), parent %v want %v", i+2, l["id"], seen[l["id"]], l["parentId"], parent)
		}
		seen[l["id"]] = true
		parent = l["id"]
	}
	ca, err := a.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(loaded, ca); d != "" {
		t.Errorf("handle a differs from the file:\n%s", d)
	}
	if d := cmp.Diff(loaded, cb); d != "" {
		t.Errorf("handle b differs from the file:\n%s", d)
	}
	if len(loaded.Messages) != 1 { // all user messages merge into one
		t.Errorf("%d messages, want 1 merged", len(loaded.Messages))
	}
}

func TestIDsUniqueInFile(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	// The generator repeats itself; ids must still be unique.
	tr := newTestTranscript(t, path, newMemLocker(), nil, withRand(seqRand(1, 1, 2, 2, 1, 3)))
	ids, err := tr.Append(ctx, user("a"), assistantText("b"), user("c"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"00000001", "00000002", "00000003"}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	// An id that only the unread part of a compacted file holds is avoided too.
	more := make([]sessions.Message, 100)
	for i := range more {
		more[i] = user(strings.Repeat("x", 1000))
	}
	ids2, err := tr.Append(ctx, more...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: ids2[99]}); err != nil {
		t.Fatal(err)
	}
	tr2 := newTestTranscript(t, path, newMemLocker(), nil, withRand(seqRand(1, 2, 3, 0xabc)))
	got, err := tr2.Append(ctx, user("d"))
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "00000abc" {
		t.Errorf("new id %q reuses an id of the unread prefix", got[0])
	}
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	if n, off, err := tr.Stats(ctx); n != 0 || off != 0 || err != nil {
		t.Fatalf("Stats of a missing file = %d, %d, %v", n, off, err)
	}
	var last []string
	for range 30 {
		ids, err := tr.Append(ctx, user(strings.Repeat("y", 4000)), assistantText("ok"))
		if err != nil {
			t.Fatal(err)
		}
		last = ids
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: last[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, user("after")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	wantOff := int64(strings.Index(string(b), `{"type":"compaction"`))
	for _, tr := range []*File{tr, newTestTranscript(t, path, newMemLocker(), nil)} {
		n, off, err := tr.Stats(ctx)
		if err != nil || n != 61 || off != wantOff {
			t.Errorf("Stats = %d, %d, %v; want 61, %d", n, off, err, wantOff)
		}
	}
}

func TestExternalChangeIsSeen(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	lock := newMemLocker()
	a := newTestTranscript(t, path, lock, nil)
	b := newTestTranscript(t, path, lock, nil)
	if _, err := a.Append(ctx, user("from a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Context(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, assistantText("a again")); err != nil {
		t.Fatal(err)
	}
	c, err := b.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:from a", "assistant:a again"}, summarize(c.Messages)); d != "" {
		t.Errorf("b missed a's append (-want +got):\n%s", d)
	}
	// The file is archived (reset): the transcript reads as empty.
	if err := os.Rename(path, path+".reset.1"); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Context(ctx); err != nil || len(c.Messages) != 0 {
		t.Errorf("after archive: %v, %v", summarize(c.Messages), err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "nope.jsonl"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := ReadHistory(filepath.Join(t.TempDir(), "nope.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadHistory of a missing file: %v, want ErrNotExist", err)
	}
	tr, err := Open(filepath.Join(t.TempDir(), "x.jsonl"), "s", Header{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(context.Background(), user("x")); err == nil {
		t.Error("Append on a read-only transcript succeeded")
	}
}

func TestAppendHonoursLockContext(t *testing.T) {
	lock := newMemLocker()
	unlock, _ := lock.Lock(context.Background())
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr := newTestTranscript(t, tempPath(t), lock, nil)
	if _, err := tr.Append(ctx, user("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a held lock and a cancelled context: %v", err)
	}
}

// TestAppendLazyIsReadAndChainedLikeAppend: lazily appended inputs are in
// the file at once (a reader in another process sees them) and the next
// Append chains after them.
func TestAppendLazyIsReadAndChainedLikeAppend(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	in := user("input")
	in.RecordIDs = []string{"tg:default:1:1"}
	if _, err := tr.AppendLazy(ctx, in); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path, nil)
	if err != nil || len(c.Messages) != 1 || c.Messages[0].Text() != "input" {
		t.Fatalf("lazy append not in the file: %+v %v", c.Messages, err)
	}
	if _, err := tr.Append(ctx, assistantText("reply")); err != nil {
		t.Fatal(err)
	}
	other := newTestTranscript(t, path, newMemLocker(), nil)
	rs, err := other.Records(ctx, []string{"tg:default:1:1"})
	if err != nil || !rs.Consumed["tg:default:1:1"] || !rs.Answered || rs.Answer != "reply" {
		t.Fatalf("records after reopen %+v %v", rs, err)
	}
}
