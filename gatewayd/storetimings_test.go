package gatewayd

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestStoreTimingsObserved: chat turns on the files backend take file
// locks and their counters are flushed to the index; both show in the
// histograms.
func TestStoreTimingsObserved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(reloadYAML(filepath.Join(dir, "state"), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	reply, sid := chat(t, addr, "", "hello")
	if reply == "" {
		t.Fatal("no reply")
	}
	// The first reply records the session's delivery context, an index
	// write that takes the turn's coalesced counters with it; a second
	// turn delivered to the same place leaves its counters to the flush.
	if reply, _ := chat(t, addr, sid, "again"); reply == "" {
		t.Fatal("no second reply")
	}
	count := func(name string) int {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := regexp.MustCompile(`(?m)^` + name + `_count (\d+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("%s is not on /metrics", name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if n := count("gateway_store_lock_wait_seconds"); n == 0 {
		t.Error("no lock wait observed after a turn")
	}
	deadline := time.Now().Add(time.Minute) // the flush runs each second; a cap, not a timing check
	for count("gateway_store_flush_seconds") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no flush observed after a turn")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
