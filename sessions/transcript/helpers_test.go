package transcript

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/sessions"
)

// summaryPrefix and summarySuffix wrap a compaction summary in a context,
// in pi's words (the wire format).
const (
	summaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	summarySuffix = "\n</summary>"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// memLocker is an in-process transcript lock for tests.
type memLocker struct{ ch chan struct{} }

func newMemLocker() *memLocker { return &memLocker{ch: make(chan struct{}, 1)} }

func (l *memLocker) Lock(ctx context.Context) (func(), error) {
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// seqRand returns the given values in turn, then counts up from the last.
func seqRand(vals ...uint32) func() uint32 {
	i := 0
	next := uint32(0x10000000)
	return func() uint32 {
		if i < len(vals) {
			i++
			return vals[i-1]
		}
		next++
		return next
	}
}

func fixedClock() func() time.Time {
	t := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func newTestTranscript(t testing.TB, path string, lock Locker, log *zap.Logger, opts ...Option) *File {
	t.Helper()
	tr, err := Open(path, "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f",
		Header{SessionKey: "agent:main:telegram:direct:42", AgentID: "main", Cwd: "/var/lib/gateway"}, lock, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.WarnLevel)
	return zap.New(core), logs
}

func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f.jsonl")
}

func assistantText(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Provider: "echo", Model: "echo-1", Timestamp: 1}
}

func assistantCalls(ids ...string) sessions.Message {
	m := sessions.Message{Role: sessions.RoleAssistant, Provider: "echo", Model: "echo-1", Timestamp: 1}
	for _, id := range ids {
		m.Content = append(m.Content, sessions.Content{Type: sessions.BlockToolCall, ID: id, Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)})
	}
	return m
}

func toolResult(id, text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: id, ToolName: "bash", Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Timestamp: 1}
}

func user(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Timestamp: 1}
}

// summarize renders messages compactly for comparisons: "role:text" with
// tool calls as "call(id)" and results as "result(id)=text".
func summarize(msgs []sessions.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var parts []string
		for _, c := range m.Content {
			switch c.Type {
			case sessions.BlockText:
				parts = append(parts, c.Text)
			case sessions.BlockToolCall:
				parts = append(parts, "call("+c.ID+")")
			default:
				parts = append(parts, c.Type)
			}
		}
		s := m.Role + ":" + strings.Join(parts, "+")
		if m.Role == sessions.RoleToolResult {
			s = "result(" + m.ToolCallID + ")=" + strings.Join(parts, "+")
		}
		out[i] = s
	}
	return out
}

func readLines(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d does not parse: %v: %q", i+1, err, l)
		}
		out = append(out, m)
	}
	return out
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got ---\n%s", name, got)
	}
}
