package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

// faultyFile fails writes while full (writing half the bytes first, as a
// nearly full disk does) and, when badTruncate, also fails to cut back.
type faultyFile struct {
	*os.File
	full, badTruncate *atomic.Bool
}

func (f faultyFile) Write(b []byte) (int, error) {
	if f.full.Load() {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

func (f faultyFile) Truncate(n int64) error {
	if f.badTruncate.Load() {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Truncate(n)
}

// faultyOpener opens the journal's log as a faultyFile.
func faultyOpener(full, badTruncate *atomic.Bool) func(string) (JournalFile, error) {
	return func(p string) (JournalFile, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		return faultyFile{File: f, full: full, badTruncate: badTruncate}, nil
	}
}

// TestJournalFaultsNeverGlueOrLose: with the disk full and even the
// cut-back failing, Accept refuses (ErrStorage), marks wait in memory, and
// once writes work again everything is written whole: a restart loads
// every line, nothing accepted is lost, nothing finished comes back.
func TestJournalFaultsNeverGlueOrLose(t *testing.T) {
	for _, badTruncate := range []bool{false, true} {
		name := "cut back"
		if badTruncate {
			name = "cut back fails"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var full, badTrunc atomic.Bool
			open := faultyOpener(&full, &badTrunc)
			ctx := context.Background()
			j := openJournalWith(dir, time.Now, zap.NewNop(), open)
			if j.openErr != nil {
				t.Fatal(j.openErr)
			}
			for _, id := range []string{"a", "b", "c"} {
				if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			full.Store(true)
			badTrunc.Store(badTruncate)
			if _, err := j.Accept(ctx, sessions.Record{ID: "refused", Payload: json.RawMessage(`{}`)}); !errors.Is(err, sessions.ErrStorage) {
				t.Fatalf("Accept on a full disk: %v, want ErrStorage", err)
			}
			if j.Health() == nil {
				t.Fatal("healthy while writes fail")
			}
			if err := j.Done("a"); err != nil { // waits in memory
				t.Fatal(err)
			}
			if err := j.Ready(sessions.Reply{ID: "r1", Records: []string{"b"}, Chunks: []string{"x", "y"}}); err != nil {
				t.Fatal(err)
			}
			if err := j.Sent("r1", 1); err != nil {
				t.Fatal(err)
			}
			full.Store(false)
			badTrunc.Store(false)
			deadline := time.Now().Add(10 * time.Second)
			for j.Health() != nil {
				if time.Now().After(deadline) {
					t.Fatal("journal did not recover after space returned")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := j.Accept(ctx, sessions.Record{ID: "refused", Payload: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("redelivered message after recovery: %v", err)
			}
			if err := j.close(); err != nil {
				t.Fatal(err)
			}
			j2 := openTestJournal(t, dir, nil)
			pending := pendingIDs(t, j2)
			replies, _ := j2.Replies()
			if len(pending) != 2 || pending[0] != "c/0/0" || pending[1] != "refused/0/0" {
				t.Errorf("pending after restart %v, want c and refused", pending)
			}
			if len(replies) != 1 || replies[0].ID != "r1" || replies[0].Sent != 1 {
				t.Errorf("outbox after restart %+v, want r1 with one chunk sent", replies)
			}
			if dup, _ := j2.Accept(ctx, sessions.Record{ID: "a"}); !dup {
				t.Error("a finished record came back")
			}
			b, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
			for i, line := range splitLines(b) {
				if !json.Valid(line) {
					t.Errorf("line %d is not whole JSON: %q", i+1, line)
				}
			}
		})
	}
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}
