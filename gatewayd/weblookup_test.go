package gatewayd

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions/filestore"
)

// TestWebChatIntoUnreadableIndexIsNotNotFound: a web chat continuing its
// session while the session index cannot be read is answered 503 "try
// again later", not 404 "session not found": the page takes a 404 for a
// session deleted in another tab and moves the person to a new chat.
func TestWebChatIntoUnreadableIndexIsNotNotFound(t *testing.T) {
	t.Setenv(filestore.CacheTTLEnv, "0") // every lookup reads the files
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, addr := startDaemonFromFile(t, path, &fakeClock{})
	_, sid := chat(t, addr, "", "hello")
	// The turn's coalesced updates written now: no commit of the daemon's
	// own (which trusts its cache while it writes, holding the store's
	// lock) runs while the index is broken below.
	if err := d.backend.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	index, err := filepath.Glob(filepath.Join(state, "agents", "main", "*", "sessions.json"))
	if err != nil || len(index) != 1 {
		t.Fatalf("the index: %v %v", index, err)
	}
	// The disk fails: the index is no file any more.
	if err := os.Rename(index[0], index[0]+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(index[0], 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := d.backend.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, err := st.GetByID(sid); err != nil {
			break // the store reads the broken index (a commit in flight had ended)
		}
		if time.Now().After(deadline) {
			t.Fatal("the store still answers from its cache with the index broken")
		}
	}
	body, _ := json.Marshal(map[string]string{"message": "again", "sessionId": sid})
	res, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "try again") {
		t.Errorf("chat with the index unreadable: %s %s, want 503 try again", res.Status, b)
	}
	// Put back, the index answers again (the daemon's shutdown needs it).
	if err := os.Remove(index[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(index[0]+".away", index[0]); err != nil {
		t.Fatal(err)
	}
}
