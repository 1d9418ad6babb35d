//go:build unix

package agents

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// A named pipe in the workspace (a tool's control pipe) is refused as not
// a regular file at once: opening it for reading would block until a
// writer came, holding the turn in a system call no /stop ends.
func TestSendMediaFIFORefusedWithoutBlocking(t *testing.T) {
	ws := mediaWorkspace(t)
	fifo := filepath.Join(ws, "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	h, _ := mediaHarness(t, ws)
	type out struct {
		res Result
		tr  sessions.Message
	}
	done := make(chan out, 1)
	go func() {
		res, tr := runSendMedia(t, h, map[string]any{"action": "send_media", "files": []string{"pipe.png"}})
		done <- out{res, tr}
	}()
	var got out
	select {
	case got = <-done:
	case <-time.After(20 * time.Second):
		// Unblock the open so the test can end, and fail.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		got = <-done
		t.Errorf("send_media of a FIFO blocked until a writer opened it")
	}
	if !got.tr.IsError || !strings.Contains(got.tr.Text(), "not a regular file") || len(got.res.Media) != 0 {
		t.Fatalf("tool result %q (error %v), media %+v: want 'not a regular file'", got.tr.Text(), got.tr.IsError, got.res.Media)
	}
}
