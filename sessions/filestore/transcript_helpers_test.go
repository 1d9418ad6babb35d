package filestore

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// The helpers below are the transcript tests' own (sessions'
// transcript_helpers_test.go), for the files backend's tests that moved here.

func intp(v int) *int { return &v }

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

func newTestTranscript(t testing.TB, path string, lock transcript.Locker, log *zap.Logger, opts ...transcript.Option) *transcript.File {
	t.Helper()
	tr, err := transcript.Open(path, "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f",
		transcript.Header{SessionKey: "agent:main:telegram:direct:42", AgentID: "main", Cwd: "/var/lib/gateway"}, lock, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "3f2c7a9e-1b4d-4c8e-9f00-5a6b7c8d9e0f.jsonl")
}

func assistantText(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Provider: "echo", Model: "echo-1", Timestamp: 1}
}

func user(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, Timestamp: 1}
}

// everything is the limit that keeps every entry a room log holds
// (as in sessions/transfer/rooms.go).
var everything = sessions.HistoryLimits{Count: math.MaxInt32, MaxBytes: 0}
