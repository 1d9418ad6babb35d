package agents

// Tests against the real sessions store on disk.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// disk is a runner over a real filestore.Manager in a temp dir.
type disk struct {
	t    *testing.T
	dir  string
	mgr  *filestore.Manager
	r    *Runner
	p    *fakeProvider
	mu   sync.Mutex
	disp []Dispatch
}

func openDisk(t *testing.T, dir string, d Defaults, list []Agent, p *fakeProvider) *disk {
	t.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	if d.Model.Primary == "" {
		d.Model.Primary = "fake/model-1"
	}
	k := &disk{t: t, dir: dir, mgr: mgr, p: p}
	k.r, err = NewRunner(Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": p}, Defaults: d, Agents: list,
		Dispatch: func(_ context.Context, d Dispatch) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.disp = append(k.disp, d)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *disk) begin(agent string, key routing.Key) sessions.Entry {
	k.t.Helper()
	st, err := k.mgr.Store(agent)
	if err != nil {
		k.t.Fatal(err)
	}
	e, _, err := st.Begin(context.Background(), key, sessions.Origin{Channel: "telegram", At: time.Now()})
	if err != nil {
		k.t.Fatal(err)
	}
	return e
}

func (k *disk) entry(agent string, key routing.Key) (sessions.Entry, bool) {
	st, _ := k.mgr.Store(agent)
	e, ok, err := st.Get(key)
	if err != nil {
		k.t.Fatal(err)
	}
	return e, ok
}

// diskTranscript is a files backend transcript: the seam's TranscriptLog
// and its file.
type diskTranscript interface {
	sessions.TranscriptLog
	Path() string
}

func (k *disk) transcript(agent string, key routing.Key) diskTranscript {
	e, ok := k.entry(agent, key)
	if !ok {
		k.t.Fatalf("no entry for %s", key)
	}
	st, _ := k.mgr.Store(agent)
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		k.t.Fatal(err)
	}
	return tr
}

func (k *disk) dispatches() []Dispatch {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Dispatch(nil), k.disp...)
}

// run performs d like the dispatcher: begin, then a turn with its message.
func (k *disk) run(d Dispatch) Result {
	k.t.Helper()
	k.begin(d.AgentID, d.Key)
	res, err := k.r.Run(context.Background(), Turn{AgentID: d.AgentID, Key: d.Key, Inputs: []sessions.Message{d.Message}})
	if err != nil {
		k.t.Fatalf("run %s: %v", d.Key, err)
	}
	return res
}

func fileLines(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 {
			var v struct {
				Type    string `json:"type"`
				Message struct {
					Role string `json:"role"`
				} `json:"message"`
			}
			if jerr := json.Unmarshal(line, &v); jerr != nil {
				t.Fatalf("bad transcript line %q: %v", line, jerr)
			}
			counts[v.Type]++
			if v.Type == "message" {
				counts["role:"+v.Message.Role]++
			}
		}
		if err != nil {
			return counts
		}
	}
}

func TestDiskLongConversationCompacts(t *testing.T) {
	const window = 20000
	p := &fakeProvider{name: "fake"}
	p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n%3 == 1 && req.Messages[len(req.Messages)-1].Role == sessions.RoleUser {
			return assistantCall(fmt.Sprintf("call-%d", n), "sessions_list", map[string]any{"limit": 2}), nil
		}
		return assistantText(fmt.Sprintf("answer %d %s", n, strings.Repeat("a", 1200))), nil
	}
	k := openDisk(t, t.TempDir(), Defaults{ContextWindow: window, Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 2000}},
		[]Agent{{ID: "main"}}, p)
	key, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	k.begin("main", key)
	const turns = 60
	for i := 0; i < turns; i++ {
		if _, err := k.r.Run(context.Background(), Turn{AgentID: "main", Key: key,
			Inputs: []sessions.Message{sessions.UserText(fmt.Sprintf("question %d %s", i, strings.Repeat("q", 2000)), time.Now())}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, req := range p.requests() {
		if n := llm.EstimateRequest(req); n >= window {
			t.Fatalf("request %d holds %d tokens, window %d", i, n, window)
		}
		msgs := req.Messages
		if strings.Contains(msgs[0].Text(), "<summary>") {
			msgs = msgs[1:]
		}
		checkPaired(t, fmt.Sprintf("request %d", i), msgs)
	}
	tr := k.transcript("main", key)
	c, err := tr.Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Summary == "" || !strings.Contains(c.Messages[0].Text(), c.Summary) {
		t.Fatal("no summary in the context")
	}
	if p.summaryRequests() == 0 {
		t.Fatal("the summariser was never called")
	}
	e, _ := k.entry("main", key)
	counts := fileLines(t, tr.Path())
	if counts["compaction"] < 3 || e.CompactionCount != counts["compaction"] {
		t.Fatalf("%d compaction lines, entry says %d", counts["compaction"], e.CompactionCount)
	}
	if counts["role:user"] != turns || counts["role:assistant"] < turns || counts["role:toolResult"] == 0 {
		t.Fatalf("transcript on disk lost messages: %v", counts)
	}
	hist, _ := tr.History(context.Background())
	if len(hist) != counts["message"] {
		t.Fatalf("history %d messages, file %d", len(hist), counts["message"])
	}
}

func TestDiskSpawnAnnounceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	p := &fakeProvider{name: "fake"}
	p.reply = scripted(map[string]any{"task": "sum 2 and 2", "label": "math", "cleanup": "delete"})
	k := openDisk(t, dir, Defaults{}, []Agent{{ID: "main"}}, p)
	parent, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	k.begin("main", parent)
	if _, err := k.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{sessions.UserText("delegate", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	d := k.dispatches()[0]
	if !d.Subagent || d.Deliver || d.Key.Subagent == "" {
		t.Fatalf("child dispatch %+v", d)
	}
	e, ok := k.entry("main", d.Key)
	if !ok || e.SpawnedBy != parent.String() || e.Label != "math" {
		t.Fatalf("child entry %+v", e)
	}
	// The child's turn: its reply is written, then the daemon "crashes"
	// before announcing (we append the reply directly, as the runner would).
	tr := k.transcript("main", d.Key)
	if _, err := tr.Append(context.Background(), d.Message, assistantText("2 + 2 = 4")); err != nil {
		t.Fatal(err)
	}
	if err := k.mgr.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the dispatcher replays the consumed child record (no inputs).
	k2 := openDisk(t, dir, Defaults{}, []Agent{{ID: "main"}}, p)
	calls := len(p.requests())
	if _, err := k2.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Reuse: true}); err != nil {
		t.Fatal(err)
	}
	if len(p.requests()) != calls {
		t.Fatal("the finished child called the model again")
	}
	ds := k2.dispatches()
	if len(ds) != 1 || ds[0].Key != parent || !ds[0].Deliver || ds[0].Subagent {
		t.Fatalf("announcement %+v", ds)
	}
	for _, want := range []string{"status: done", "label: math", "2 + 2 = 4"} {
		if !strings.Contains(ds[0].Message.Text(), want) {
			t.Fatalf("announcement lacks %q: %q", want, ds[0].Message.Text())
		}
	}
	// The parent's turn on the announcement.
	res := k2.run(ds[0])
	if !strings.HasPrefix(res.Text, "announced: [subagent result]") {
		t.Fatalf("parent reply %q", res.Text)
	}
	// The cleanup option is stored with the child: a restart still
	// deletes it once it has reported.
	if e, ok := k2.entry("main", d.Key); ok {
		t.Fatalf("child with cleanup delete kept after a restart: %+v", e)
	}
}

func TestDiskSpawnCleanupDelete(t *testing.T) {
	dir := t.TempDir()
	p := &fakeProvider{name: "fake"}
	p.reply = scripted(map[string]any{"task": "quick job", "cleanup": "delete"})
	k := openDisk(t, dir, Defaults{}, []Agent{{ID: "main"}}, p)
	parent, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	k.begin("main", parent)
	if _, err := k.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{sessions.UserText("go", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	d := k.dispatches()[0]
	e, _ := k.entry("main", d.Key)
	if res := k.run(d); res.Text != "child result for: quick job" {
		t.Fatalf("child reply %q", res.Text)
	}
	if _, ok := k.entry("main", d.Key); ok {
		t.Fatal("cleanup: delete kept the child entry")
	}
	archived, _ := filepath.Glob(filepath.Join(dir, "agents", "main", "sessions", e.SessionID+".jsonl.deleted.*"))
	if len(archived) != 1 {
		t.Fatalf("archived transcripts: %v", archived)
	}
	if ds := k.dispatches(); len(ds) != 2 || ds[1].Key != parent {
		t.Fatalf("dispatches %+v", ds)
	}
}
