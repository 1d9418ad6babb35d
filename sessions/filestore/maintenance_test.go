package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func TestMaintenancePrunesAndCaps(t *testing.T) {
	verifyNoLeaks(t)
	clk := newFakeClock(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	for _, mode := range []string{sessions.MaintenanceEnforce, sessions.MaintenanceWarn} {
		t.Run(mode, func(t *testing.T) {
			// Created under a large cap (creation past the cap would trigger
			// it at once); the cap is lowered before the explicit pass.
			cfg := sessions.Maintenance{Mode: mode, PruneAfter: 10 * 24 * time.Hour, MaxEntries: 100, ArchiveRetention: 20 * 24 * time.Hour}
			m := openTestManager(t, "", Options{Now: clk.Now, Maintenance: cfg})
			s := mustStore(t, m, "main")
			ctx := context.Background()
			start := clk.Now()
			old := dmKey(t, "main", "old")
			e, _ := mustBegin(t, s, old, sessions.Origin{At: start})
			appendText(t, s, e.SessionID, "old news")
			sub, _ := routing.SubagentKey("main", "c0ffee")
			clk.Advance(5 * 24 * time.Hour)
			mustBegin(t, s, dmKey(t, "main", "a"), sessions.Origin{})
			clk.Advance(time.Hour)
			mustBegin(t, s, dmKey(t, "main", "b"), sessions.Origin{})
			clk.Advance(time.Hour)
			mustBegin(t, s, sub, sessions.Origin{}) // newest, but a subagent: capped first
			clk.Advance(time.Hour)
			mustBegin(t, s, dmKey(t, "main", "c"), sessions.Origin{})
			clk.Advance(6 * 24 * time.Hour)
			mustBegin(t, s, dmKey(t, "main", "active"), sessions.Origin{}) // active now: never capped

			cfg.MaxEntries = 3
			if err := m.SetMaintenance(cfg); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Maintain(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{old.String()}, rep.Pruned); diff != "" {
				t.Errorf("pruned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{sub.String(), dmKey(t, "main", "a").String()}, rep.Capped); diff != "" {
				t.Errorf("capped (-want +got):\n%s", diff)
			}
			list, _ := s.List()
			if mode == sessions.MaintenanceWarn {
				if len(list) != 6 {
					t.Errorf("warn mode changed the index: %d entries", len(list))
				}
				return
			}
			if len(list) != 3 {
				t.Errorf("%d entries after enforce, want 3", len(list))
			}
			arch, _ := s.Archived(old)
			if len(arch) != 1 || arch[0].Reason != "pruned" || !fileExists(filepath.Join(s.Dir(), arch[0].File)) {
				t.Fatalf("pruned session not archived: %+v", arch)
			}
			// After the archive retention the archived transcript and its record go.
			clk.Advance(21 * 24 * time.Hour)
			mustBegin(t, s, dmKey(t, "main", "active"), sessions.Origin{})
			rep, err = s.Maintain(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ArchivesRemoved) != 1 || fileExists(filepath.Join(s.Dir(), arch[0].File)) {
				t.Errorf("archives removed %v", rep.ArchivesRemoved)
			}
			if arch, _ := s.Archived(old); len(arch) != 0 {
				t.Errorf("expired archive still listed: %+v", arch)
			}
		})
	}
}

func TestMaintenanceSweepsOrphanLocksAndTemps(t *testing.T) {
	verifyNoLeaks(t)
	m := openTestManager(t, "", Options{})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	e, _ := mustBegin(t, s, k, sessions.Origin{})
	appendText(t, s, e.SessionID, "x")
	orphan := filepath.Join(s.Dir(), "11111111-2222-4333-8444-555555555555.jsonl.lock")
	tmp := filepath.Join(s.Dir(), "sessions.json.1.abc.tmp")
	for _, p := range []string{orphan, tmp} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	_ = os.Chtimes(tmp, old, old)
	rep, err := s.Maintain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.LocksRemoved != 1 || rep.TempsRemoved != 1 || fileExists(orphan) || fileExists(tmp) {
		t.Errorf("report %+v", rep)
	}
	if !fileExists(filepath.Join(s.Dir(), e.SessionID+".jsonl.lock")) {
		t.Error("a live session's lock file was removed")
	}
}

func TestMaintenanceValidate(t *testing.T) {
	for _, c := range []sessions.Maintenance{{Mode: "sometimes"}, {PruneAfter: -1}, {MaxEntries: -1}, {ArchiveRetention: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := Open(Options{StateDir: t.TempDir(), Maintenance: sessions.Maintenance{Mode: "x"}}); err == nil {
		t.Error("Open accepted a bad maintenance mode")
	}
}

func TestRepairLaggingCountersAtStart(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	s := mustStore(t, m, "main")
	k := dmKey(t, "main", "1")
	e, _ := mustBegin(t, s, k, sessions.Origin{})
	for i := range 3 {
		appendText(t, s, e.SessionID, fmt.Sprint(i))
	}
	// The process "crashed" before any counter flush: the index says 0.
	m2 := openTestManager(t, dir, Options{})
	got, _, err := mustStore(t, m2, "main").Get(k)
	if err != nil || got.MessageCount != 3 {
		t.Errorf("messageCount after repair = %d (%v), want 3", got.MessageCount, err)
	}
	// The repair is applied at once and written with the next flush, as
	// counters are.
	if err := m2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if readIndexFile(t, s)[k.String()].MessageCount != 3 {
		t.Error("repair not written")
	}
}

func TestAgentsAndHostileIDs(t *testing.T) {
	verifyNoLeaks(t)
	parent := t.TempDir()
	state := filepath.Join(parent, "state")
	m := openTestManager(t, state, Options{})
	hostile := []string{"../x", "..", "a/b", "/etc", "a\x00b", "A", "", string(make([]byte, 10<<10)),
		"ünï", "main/../../x", `..\x`, "main\n"}
	for _, id := range hostile {
		if _, err := m.Store(id); err == nil {
			t.Errorf("Store(%q) accepted", sessions.Clip(id))
		}
	}
	s := mustStore(t, m, "main")
	for _, id := range append(hostile, "../../../etc/passwd", "00000000-0000-0000-0000-00000000000G") {
		if _, err := s.Transcript(id); err == nil {
			t.Errorf("Transcript(%q) accepted", sessions.Clip(id))
		}
	}
	ctx := context.Background()
	for _, peer := range []string{"../../x", "/", "a\x00b", string(make([]byte, 200)), "日本語", `..\..`, "%2e%2e"} {
		k, err := routing.PeerKey("main", "telegram", "", routing.Direct, peer)
		if err != nil {
			continue
		}
		e, _, err := s.Begin(ctx, k, sessions.Origin{Title: peer, To: peer, Name: peer})
		if err != nil {
			t.Fatalf("Begin(%q): %v", peer, err)
		}
		appendText(t, s, e.SessionID, peer)
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// Everything written lives below the state dir, with the expected modes.
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "state" {
		t.Errorf("files outside the state dir: %v", entries)
	}
	err := filepath.Walk(state, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := m.Agents()
	if err != nil || !cmp.Equal(agents, []string{"main"}) {
		t.Errorf("Agents = %v, %v", agents, err)
	}
}

// TestCapEnforcedAsSessionsAreCreated: passing maxEntries by creating
// sessions caps the store at once (not at the next hourly pass), oldest
// first, and the log line names what was archived.
func TestCapEnforcedAsSessionsAreCreated(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC))
	core, logs := observer.New(zap.InfoLevel)
	m := openTestManager(t, "", Options{Now: clk.Now, Logger: zap.New(core),
		Maintenance: sessions.Maintenance{Mode: sessions.MaintenanceEnforce, MaxEntries: 3}})
	s := mustStore(t, m, "main")
	for i := range 3 {
		mustBegin(t, s, dmKey(t, "main", fmt.Sprint("old", i)), sessions.Origin{Channel: "telegram", At: clk.Now()})
		clk.Advance(time.Second)
	}
	clk.Advance(10 * time.Minute)
	for i := range 2 {
		mustBegin(t, s, dmKey(t, "main", fmt.Sprint("new", i)), sessions.Origin{Channel: "telegram", At: clk.Now()})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		es, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(es) <= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries, cap 3 not enforced as sessions were added; logs %+v", len(es), logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 2 {
		if _, ok, _ := s.Get(dmKey(t, "main", fmt.Sprint("new", i))); !ok {
			t.Errorf("new session %d archived instead of an old one", i)
		}
	}
	// The log lines (one per cap pass) name every archived session.
	capped := map[string]bool{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for _, e := range logs.FilterMessage("session maintenance archived sessions").All() {
			if keys, ok := e.ContextMap()["capped_keys"].([]interface{}); ok {
				for _, k := range keys {
					capped[fmt.Sprint(k)] = true
				}
			}
		}
		if len(capped) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if !capped["agent:main:telegram:direct:old0"] || !capped["agent:main:telegram:direct:old1"] || len(capped) != 2 {
		t.Errorf("log lines name %v as capped, want old0 and old1", capped)
	}
}
