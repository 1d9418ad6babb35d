package transcript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

func TestTornLastLine(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tail string
	}{
		{"half a line", `{"type":"message","id":"abcd0003","parentId":"abcd0002","timest`},
		{"single brace", `{`},
		{"garbage bytes", "\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			log, logs := observedLogger()
			tr := newTestTranscript(t, path, newMemLocker(), log)
			ids, err := tr.Append(ctx, user("one"), assistantText("two"))
			if err != nil {
				t.Fatal(err)
			}
			appendRaw(t, path, tc.tail)

			for _, tr := range []*File{tr, newTestTranscript(t, path, newMemLocker(), log)} {
				c, err := tr.Context(ctx)
				if err != nil {
					t.Fatalf("Context: %v", err)
				}
				if d := cmp.Diff([]string{"user:one", "assistant:two"}, summarize(c.Messages)); d != "" {
					t.Errorf("context (-want +got):\n%s", d)
				}
			}
			if logs.FilterMessage("transcript: ignoring torn last line").Len() == 0 {
				t.Error("no warning about the torn line")
			}
			newIDs, err := tr.Append(ctx, user("three"))
			if err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, path) // every line parses: the fragment is gone
			if len(lines) != 4 || lines[3]["parentId"] != ids[1] || lines[3]["id"] != newIDs[0] {
				t.Errorf("after append: %d lines, last %v", len(lines), lines[len(lines)-1])
			}
		})
	}
}

func TestTornHeader(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	if err := os.WriteFile(path, []byte(`{"type":"session","versi`), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	c, err := tr.Context(ctx)
	if err != nil || len(c.Messages) != 0 {
		t.Fatalf("Context = %v, %v; want empty", c, err)
	}
	if _, err := tr.Append(ctx, user("hi")); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0]["type"] != "session" || lines[1]["parentId"] != nil {
		t.Errorf("lines = %v", lines)
	}
}

func TestUnterminatedCompleteLine(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	ids, err := tr.Append(ctx, user("one"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(string(b), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	tr2 := newTestTranscript(t, path, newMemLocker(), nil)
	c, err := tr2.Context(ctx)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Context = %v, %v", summarize(c.Messages), err)
	}
	if _, err := tr2.Append(ctx, assistantText("two")); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 || lines[2]["parentId"] != ids[0] {
		t.Errorf("lines = %v", lines)
	}
}

func TestBadHeaderNamesLineNumber(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, content, want string
	}{
		{"no header", `{"type":"message","id":"aaaa0001","parentId":null,"message":{"role":"user","content":"a","timestamp":1}}` + "\n", "line 1: not a session header"},
		{"version 1", `{"type":"session","id":"s1","timestamp":"x","cwd":"/"}` + "\n", "line 1: transcript version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := newTestTranscript(t, path, newMemLocker(), nil).Context(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Context error = %v, want one containing %q", err, tt.want)
			}
			var le *lineError
			if !errors.As(err, &le) {
				t.Errorf("error %v is not a *lineError", err)
			}
			if _, err := newTestTranscript(t, path, newMemLocker(), nil).Append(ctx, user("x")); err == nil {
				t.Error("Append to a transcript without a valid header succeeded")
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	if _, err := tr.Append(ctx, user("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Append(ctx, user(big), assistantText(big[:1<<20+7]), user("after")); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() (sessions.Context, error){
		"tail":    func() (sessions.Context, error) { return LoadFile(path, nil) },
		"forward": func() (sessions.Context, error) { return forwardContext(t, path) },
	} {
		c, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(c.Messages) != 3 || c.Messages[0].Text() != "first\n\n"+big || len(c.Messages[1].Text()) != 1<<20+7 || c.Messages[2].Text() != "after" {
			t.Errorf("%s: long lines not read back intact (%d messages)", name, len(c.Messages))
		}
	}
}

// forwardContext loads path with the forward reader only.
func forwardContext(t testing.TB, path string) (sessions.Context, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return sessions.Context{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sessions.Context{}, err
	}
	st, err := loadForward(f, fi, zap.NewNop())
	if err != nil {
		return sessions.Context{}, err
	}
	return buildContext(st.view, st.leaf), nil
}

func appendRaw(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeCompactedSession writes n messages (user/assistant pairs with tool
// calls every tenth turn), then a compaction keeping the last keep of them,
// then tail messages after it. It returns the compaction's byte offset.
func writeCompactedSession(t testing.TB, path string, n, keep, tail int) int64 {
	t.Helper()
	ctx := context.Background()
	tr := newTestTranscript(t, path, newMemLocker(), nil, withoutSync())
	msgs := make([]sessions.Message, 0, n)
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, user(fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum ", 20))))
		if i%10 == 9 {
			msgs = append(msgs, assistantCalls(fmt.Sprintf("call_%d", i)), toolResult(fmt.Sprintf("call_%d", i), "result"))
		}
		msgs = append(msgs, assistantText(fmt.Sprintf("answer %d: %s", i, strings.Repeat("dolor sit amet ", 20))))
	}
	msgs = msgs[:n]
	ids, err := tr.Append(ctx, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "long talk", FirstKeptEntryID: ids[n-keep], TokensBefore: 80000, TokensAfter: 5000}); err != nil {
		t.Fatal(err)
	}
	for i := range tail {
		if _, err := tr.Append(ctx, user(fmt.Sprintf("after %d", i)), assistantText("ok")); err != nil {
			t.Fatal(err)
		}
	}
	_, off, err := tr.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func TestLoadCompactedReadsOnlyTheTail(t *testing.T) {
	ctx := context.Background()
	src := tempPath(t)
	off := writeCompactedSession(t, src, 10000, 50, 3)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	full, err := forwardContext(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Messages) < 50 || full.Summary != "long talk" {
		t.Fatalf("forward load: %d messages, summary %q", len(full.Messages), full.Summary)
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"from the end", nil},
		{"with offset hint", []Option{WithCompactionHint(off)}},
		{"with a stale hint", []Option{WithCompactionHint(off / 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "copy.jsonl")
			copyFile(t, src, path)
			tr := newTestTranscript(t, path, newMemLocker(), nil, tc.opts...)
			c, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(full, c); d != "" {
				t.Errorf("tail load differs from the full load (-full +tail):\n%s", d)
			}
			tr.mu.Lock()
			parsed, lo := tr.st.parsed, tr.st.lo
			tr.mu.Unlock()
			// 50 kept + compaction + 6 after, plus at most one block of extra lines.
			if parsed > 400 || lo < fi.Size()/2 {
				t.Errorf("parsed %d of 10,000+ lines, read from offset %d of %d", parsed, lo, fi.Size())
			}
			// An append extends the cached context without reparsing.
			if _, err := tr.Append(ctx, user("one more")); err != nil {
				t.Fatal(err)
			}
			c2, err := tr.Context(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tr.mu.Lock()
			parsed2 := tr.st.parsed
			tr.mu.Unlock()
			if parsed2 != parsed || c2.Messages[len(c2.Messages)-1].Text() != "one more" {
				t.Errorf("append reparsed (%d -> %d lines) or lost the message", parsed, parsed2)
			}
		})
	}
}

func TestCompactionKeepingOlderEntriesLoadsBackwards(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	tr := newTestTranscript(t, path, newMemLocker(), nil, withoutSync())
	var first []string
	for i := range 300 {
		ids, err := tr.Append(ctx, user(fmt.Sprintf("u%d %s", i, strings.Repeat("z", 500))), assistantText(fmt.Sprintf("a%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			first = ids
		}
	}
	// Keeps almost everything: the loader must walk back many blocks.
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "s", FirstKeptEntryID: first[0]}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := forwardContext(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, c); d != "" {
		t.Errorf("(-full +tail):\n%s", d)
	}
	if len(c.Messages) != 1+2*280-1 { // summary merged with u20
		t.Errorf("%d messages", len(c.Messages))
	}
	// A second compaction that keeps nothing.
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "t"}); err != nil {
		t.Fatal(err)
	}
	c, err = tr.Context(ctx)
	if err != nil || len(c.Messages) != 1 || c.Summary != "t" {
		t.Errorf("after keep-nothing compaction: %v, %v", summarize(c.Messages), err)
	}
}
