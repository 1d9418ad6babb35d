package openclaw_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestImportKeysDifferingInCase: an OpenClaw index holding one chat's key
// twice, spelled in two cases (older OpenClaw releases stored keys as the
// channel sent them), maps both to one gateway key. The import brings the
// one updated last, lists the other as a duplicate with the report saying
// why, and finishes; before, both were planned as imports and the second
// write of the same key failed the whole import.
func TestImportKeysDifferingInCase(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	path := filepath.Join(dir, "agents", "ops", "sessions", "sessions.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]map[string]any{}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	e := idx["agent:ops:discord:dm:777"]
	if e == nil {
		t.Fatalf("no dm entry in %s", b)
	}
	older := map[string]any{}
	for k, v := range e {
		older[k] = v
	}
	const olderID = "0b9b8a63-5d0e-4b4e-9a55-2f7c9b1d0a11"
	older["sessionId"], older["sessionFile"] = olderID, olderID+".jsonl"
	older["updatedAt"] = 1000 // 1970: long before the fixture's entry
	delete(older, "sessionFile")
	idx["Agent:OPS:Discord:DM:777"] = older
	if b, err = json.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := read(t, dir)
	n := 0
	for _, a := range p.Agents {
		for _, k := range a.Keys {
			if k.Key == "agent:ops:discord:direct:777" {
				n++
				if k.Entry.SessionID != openclawtest.OpsDMSession {
					t.Errorf("kept session %s, want the one updated last, %s", k.Entry.SessionID, openclawtest.OpsDMSession)
				}
			}
		}
	}
	if n != 1 {
		t.Fatalf("the plan holds agent:ops:discord:direct:777 %d times, want once", n)
	}
	found := false
	for _, u := range p.Report.List() {
		found = found || (u.Field == "sessionKey.caseDuplicate" && u.Count == 1)
	}
	if !found {
		t.Errorf("the duplicate is not in the report: %+v", p.Report.List())
	}

	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	target := openclaw.Target{Sessions: mgr.Transfer(), Pairing: mgr.Backend().Pairing(), Jobs: mgr.Backend().Jobs()}
	if _, err := openclaw.Apply(context.Background(), p, target, false); err != nil {
		t.Fatalf("import: %v", err)
	}
}
