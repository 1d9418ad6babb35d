package gatewayd

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// postChat posts one web chat message and returns the HTTP status (the
// stream is read to its end).
func postChat(t *testing.T, addr, text string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text})
	resp, err := http.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestHotReloadLimits: limits added to the config file of a running
// daemon apply to the next message without a restart (the agent's rate
// here: every web chat is a sender of its own), refusals are counted in
// gateway_limit_rejections_total, and removing them lifts them.
func TestHotReloadLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	for i := range 3 {
		if code := postChat(t, addr, "free "+string(rune('a'+i))); code != http.StatusOK {
			t.Fatalf("message %d without limits: status %d", i, code)
		}
	}
	limited := reloadYAML(state, "limits: {defaults: {agent: {rate: 1/h}}}\n")
	if err := os.WriteFile(path, []byte(limited), 0o600); err != nil {
		t.Fatal(err)
	}
	// The reload lands within the watcher's debounce; the agent's bucket
	// (new: full with 1 message) lets one through, then refuses.
	deadline := time.Now().Add(20 * time.Second)
	for postChat(t, addr, "probe") != http.StatusForbidden {
		if time.Now().After(deadline) {
			t.Fatal("limits were not applied by the reload")
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `gateway_limit_rejections_total{kind="rate",scope="agent"} 1`) {
		t.Errorf("metrics lack one agent rate rejection:\n%s", grepLines(string(m), "gateway_limit"))
	}
	if err := os.WriteFile(path, []byte(reloadYAML(state, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for postChat(t, addr, "free again") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("limits were not lifted by the reload")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
