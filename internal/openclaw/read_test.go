package openclaw_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

var decoders = openclaw.Decoders{ReadIndex: filestore.ReadIndex, DecodeEntry: filestore.DecodeEntry}

func read(t *testing.T, dir string) *openclaw.Plan {
	t.Helper()
	p, err := openclaw.Read(dir, openclaw.Options{Decoders: decoders, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func keyOf(p *openclaw.Plan, key string) *sessions.KeyCopy {
	for _, a := range p.Agents {
		for i := range a.Keys {
			if a.Keys[i].Key == key {
				return &a.Keys[i]
			}
		}
	}
	return nil
}

// TestReadBothLayouts: the fixture's SQLite agent (rows only in the WAL,
// a compressed event, a materialised active path, an earlier window) and
// its JSON-era agent (a branch, a "dm" key) are read into the keys,
// entries and transcripts expected, and the source is left byte for byte
// as it was (no -shm, no WAL replay).
func TestReadBothLayouts(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	before := openclawtest.Snapshot(t, dir)
	p := read(t, dir)
	if after := openclawtest.Snapshot(t, dir); !maps.Equal(before, after) {
		for k := range after {
			if before[k] != after[k] {
				t.Errorf("the source changed: %s", k)
			}
		}
		t.Fatal("Read modified the source directory")
	}
	if len(p.Agents) != 2 || p.Agents[0].Layout != openclaw.LayoutSQLite || p.Agents[1].Layout != openclaw.LayoutJSON {
		t.Fatalf("agents %+v, want main (sqlite) and ops (json)", p.Agents)
	}
	got := map[string]int{}
	for _, a := range p.Agents {
		for _, it := range a.Items {
			got[it.Key] = it.Messages
		}
	}
	for key, want := range openclawtest.Expected {
		k := keyOf(p, key)
		if k == nil {
			t.Errorf("%s not read (got %v)", key, got)
			continue
		}
		lines := k.Transcripts[k.Entry.SessionID]
		if k.Entry.MessageCount != want.Messages {
			t.Errorf("%s: %d messages, want %d", key, k.Entry.MessageCount, want.Messages)
		}
		if last := string(lines[len(lines)-1]); !strings.Contains(last, want.Last) {
			t.Errorf("%s: last line %s, want %q", key, last, want.Last)
		}
		if h := string(lines[0]); !strings.Contains(h, `"sessionKey":"`+key+`"`) || !strings.Contains(h, `"id":"`+k.Entry.SessionID+`"`) {
			t.Errorf("%s: header %s", key, h)
		}
	}
	if len(got) != len(openclawtest.Expected) {
		t.Errorf("read keys %v, want those of Expected (the cron key has no gateway form)", got)
	}

	main := keyOf(p, "agent:main:main")
	all := string(bytes.Join(main.Transcripts[openclawtest.MainSession], []byte("\n")))
	for _, want := range []string{openclawtest.BigResult[:100], `"toolCallId":"call_1"`, `"type":"compaction"`, `"customType":"memory-flush"`} {
		if !strings.Contains(all, want) {
			t.Errorf("main transcript lacks %q", want)
		}
	}
	if strings.Contains(all, "abandoned") {
		t.Error("main transcript holds the abandoned branch")
	}
	if e := main.Entry; e.LastChannel != "telegram" || e.LastTo != "555" || e.LastAccountID != "default" || e.LastFrom != "555" ||
		e.Channel != "telegram" || e.Provider != "openai" || e.Model != "gpt-4o" || e.CompactionCount != 1 ||
		e.TotalTokens != 120 || e.Title != "What's the weather in Paris?" || !strings.Contains(e.Extra, "skillsSnapshot") ||
		e.DeliveryContext != (sessions.DeliveryContext{Channel: "telegram", To: "555", AccountID: "default"}) {
		t.Errorf("main entry %+v", e)
	}

	topic := keyOf(p, "agent:main:telegram:group:-1001:topic:7")
	if e := topic.Entry; e.GroupActivation != "always" || e.ThinkingLevel != "high" || e.ModelFor() != "anthropic/claude-sonnet" ||
		e.LastThreadID != "7" || e.LastTo != "-1001" || e.DisplayName != "Ops room" ||
		e.DeliveryContext != (sessions.DeliveryContext{Channel: "telegram", To: "-1001", AccountID: "default", ThreadID: "7"}) {
		t.Errorf("topic entry %+v", e)
	}
	if len(topic.Archived) != 1 || topic.Archived[0].SessionID != openclawtest.TopicEarlier || topic.Archived[0].MessageCount != 2 ||
		len(topic.Transcripts[openclawtest.TopicEarlier]) != 3 {
		t.Errorf("topic archived %+v", topic.Archived)
	}

	ops := keyOf(p, "agent:ops:main")
	all = string(bytes.Join(ops.Transcripts[openclawtest.OpsMainSession], []byte("\n")))
	if strings.Contains(all, "edited-away") || ops.Entry.ThinkingLevel != "low" || ops.Entry.ModelFor() != "openai/gpt-4o" {
		t.Errorf("ops main: thinking %q model %q transcript %s", ops.Entry.ThinkingLevel, ops.Entry.ModelFor(), all)
	}
	if dm := keyOf(p, "agent:ops:discord:direct:777"); dm == nil || dm.Entry.LastThreadID != "42" || dm.Entry.InputTokens != 10 {
		t.Errorf("ops dm %+v", dm)
	}

	if len(p.Jobs) != len(openclawtest.Jobs) {
		t.Errorf("read %d cron jobs, want the fixture's %d", len(p.Jobs), len(openclawtest.Jobs))
	}
	if len(p.Approvals) != 3 {
		t.Errorf("approvals %+v, want telegram 111, discord 222 and 333", p.Approvals)
	}
	rep := map[string]int{}
	for _, u := range p.Report.List() {
		rep[u.Field] = u.Count
	}
	for field, n := range map[string]int{
		"sessionKey agent:<id>:cron:…": 1, "pairing.whatsapp": 1, "pairing.nonNumericEntry": 1, "pairing.wildcard": 1,
		"state.channel_pairing_requests": 1, "transcript.abandonedBranch": 3,
		"transcript.entry.custom": 1, "entry.skillsSnapshot": 2, "transcript.archivedFile": 1,
	} {
		if rep[field] != n {
			t.Errorf("unmapped %s = %d, want %d (report %v)", field, rep[field], n, rep)
		}
	}
	for field := range rep {
		if strings.HasPrefix(field, "entry.origin") || strings.HasPrefix(field, "entry.delivery") || field == "entry.sessionFile" || field == "entry.modelProvider" {
			t.Errorf("mapped member %s reported unmapped", field)
		}
	}
}

// TestReadBadInput: each kind of bad input is an error naming the file
// and what is wrong.
func TestReadBadInput(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(dir string) error
		want   []string
	}{
		{"index not JSON", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "agents", "ops", "sessions", "sessions.json"), []byte("{not json"), 0o600)
		}, []string{"sessions.json"}},
		{"transcript line", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "agents", "ops", "sessions", openclawtest.OpsDMSession+".jsonl"), []byte("{\"type\":\"session\"}\nnot json\n"), 0o600)
		}, []string{openclawtest.OpsDMSession + ".jsonl", "line 2"}},
		{"agent db not sqlite", func(dir string) error {
			p := filepath.Join(dir, "agents", "main", "agent", "openclaw-agent.sqlite")
			os.Remove(p + "-wal")
			return os.WriteFile(p, []byte("this is not a database, it is text that is long enough to look like a header"), 0o600)
		}, []string{"openclaw-agent.sqlite"}},
		{"no agents", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "agents")) }, []string{"no agents directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
			if err := c.break_(dir); err != nil {
				t.Fatal(err)
			}
			_, err := openclaw.Read(dir, openclaw.Options{Decoders: decoders, TempDir: t.TempDir()})
			if err == nil {
				t.Fatal("read bad input without an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestReadTornLastLine: OpenClaw killed mid-append leaves its transcript
// with a torn last line (no newline, not JSON). Like loading one here
// (SPEC §3.4), the import drops that fragment and counts it in the report;
// it refused the whole state before. A bad line before the last, or a
// last line ended by its newline, is still an error naming the line.
func TestReadTornLastLine(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	path := filepath.Join(dir, "agents", "ops", "sessions", openclawtest.OpsDMSession+".jsonl")
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := read(t, dir)
	want := len(keyOf(before, "agent:ops:discord:direct:777").Transcripts[openclawtest.OpsDMSession])
	torn := append(bytes.TrimRight(whole, "\n"), []byte("\n{\"type\":\"message\",\"id\":\"zz\",\"parentId\":\"x\",\"mess")...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	p := read(t, dir)
	dm := keyOf(p, "agent:ops:discord:direct:777")
	if dm == nil || len(dm.Transcripts[openclawtest.OpsDMSession]) != want {
		t.Fatalf("with a torn last line: %+v, want the %d lines read without it", dm, want)
	}
	found := false
	for _, u := range p.Report.List() {
		found = found || (u.Field == "transcript.tornLastLine" && u.Count == 1)
	}
	if !found {
		t.Errorf("the torn line is not in the report: %+v", p.Report.List())
	}
	if err := os.WriteFile(path, append(torn, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openclaw.Read(dir, openclaw.Options{Decoders: decoders, TempDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "line") {
		t.Errorf("a bad line ended by its newline: %v, want an error naming the line", err)
	}
}

// TestReadNewerTranscriptVersion: a transcript whose header says a format
// newer than version 3 is read as version 3, and the report says so (it
// came over with "unmapped: nothing").
func TestReadNewerTranscriptVersion(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	path := filepath.Join(dir, "agents", "ops", "sessions", openclawtest.OpsDMSession+".jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nb := bytes.Replace(b, []byte(`"version":3`), []byte(`"version":7`), 1)
	if bytes.Equal(nb, b) {
		t.Fatalf("no version 3 header in %s", b)
	}
	if err := os.WriteFile(path, nb, 0o600); err != nil {
		t.Fatal(err)
	}
	p := read(t, dir)
	if keyOf(p, "agent:ops:discord:direct:777") == nil {
		t.Fatal("the session was not read")
	}
	for _, u := range p.Report.List() {
		if u.Field == "transcript.version.7" && u.Count == 1 {
			return
		}
	}
	t.Errorf("the newer version is not in the report: %+v", p.Report.List())
}

// TestReadCleansEntryText: an entry whose text holds NUL or invalid UTF-8
// (a display name from a chat) is cleaned as the gateway cleans what
// chats send (sessions.Origin.Clean) and counted; PostgreSQL refused the
// whole import with its driver error ("invalid byte sequence for encoding
// UTF8: 0x00").
func TestReadCleansEntryText(t *testing.T) {
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
	e["displayName"], e["label"] = "Ann\x00Lee", "l\x00"
	if b, err = json.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := read(t, dir)
	dm := keyOf(p, "agent:ops:discord:direct:777")
	if dm == nil || dm.Entry.DisplayName != "AnnLee" || dm.Entry.Label != "l" {
		t.Fatalf("dm entry %+v, want the NUL bytes dropped", dm)
	}
	for _, u := range p.Report.List() {
		if u.Field == "entry.text" && u.Count == 2 {
			return
		}
	}
	t.Errorf("the cleaned fields are not in the report: %+v", p.Report.List())
}
