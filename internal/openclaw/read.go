package openclaw

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Decoders are the files backend's readers of an index, handed in by the
// caller (this package imports no backend): the reference system's JSON
// index and its SQLite rows' entry JSON are the format the files backend
// reads (filestore.ReadIndex, filestore.DecodeEntry).
type Decoders struct {
	// ReadIndex reads dir/sessions.json: key → entry.
	ReadIndex func(dir string) (map[string]sessions.Entry, error)
	// DecodeEntry decodes one entry's JSON of key.
	DecodeEntry func(key string, b []byte) (sessions.Entry, error)
}

// Options tune Read.
type Options struct {
	// Agents, when not empty, are the only agents read.
	Agents []string
	Decoders
	// TempDir is where the databases are copied to be read ("": the
	// system's temporary directory). The copies are removed by Read.
	TempDir string
}

// Layouts of an agent's state.
const (
	LayoutSQLite = "sqlite"
	LayoutJSON   = "json"
)

// Plan is what an import brings over: per agent, the session keys with
// their transcripts, the pairing approvals and the cron jobs.
type Plan struct {
	Dir    string       `json:"from"`
	Agents []*AgentPlan `json:"agents"`
	// Approvals are the senders the reference system's allowlists admit.
	Approvals []pairstate.Approval `json:"approvals,omitempty"`
	// Jobs are the cron jobs of the state database; MapJobs decides what
	// each becomes.
	Jobs   []JobItem `json:"jobs,omitempty"`
	Report *Report   `json:"-"`
}

// AgentPlan is one agent's part of a Plan.
type AgentPlan struct {
	ID     string `json:"agent"`
	Layout string `json:"layout"`
	// Source is the file the agent's sessions come from.
	Source string             `json:"source"`
	Keys   []sessions.KeyCopy `json:"-"`
	Items  []Item             `json:"sessions"`
}

// Item describes one key of a plan (for printing): the source key, ours,
// the current session and the message count of its transcript.
type Item struct {
	SourceKey string `json:"sourceKey"`
	Key       string `json:"key"`
	SessionID string `json:"sessionId"`
	Messages  int    `json:"messages"`
	Archived  int    `json:"archived,omitempty"`
	// Status is what Apply did or, dry, would do: StatusImport,
	// StatusPresent or StatusConflict ("" before Apply).
	Status string `json:"status,omitempty"`
}

// Read reads the OpenClaw state dir at dir into a Plan, never writing in
// dir. An agent is read in the SQLite layout when its database exists,
// else in the JSON-era layout. Bad input is an error naming the file and
// what is wrong with it.
func Read(dir string, o Options) (*Plan, error) {
	if o.ReadIndex == nil || o.DecodeEntry == nil {
		return nil, errors.New("openclaw: read: no decoders")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("openclaw: read %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("openclaw: read: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("openclaw: read: %s is not a directory", abs)
	}
	agents, err := agentDirs(abs, o.Agents)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.TempDir, "gateway-openclaw-import-")
	if err != nil {
		return nil, fmt.Errorf("openclaw: read: %w", err)
	}
	defer os.RemoveAll(tmp)
	p := &Plan{Dir: abs, Report: &Report{}}
	for _, a := range agents {
		ap, err := readAgent(abs, a, tmp, o, p.Report)
		if err != nil {
			return nil, err
		}
		if ap != nil {
			p.Agents = append(p.Agents, ap)
		}
	}
	if err := readState(abs, tmp, o.Agents, p); err != nil {
		return nil, err
	}
	if err := readCredentials(abs, p); err != nil {
		return nil, err
	}
	return p, nil
}

// agentDirs lists the agents of dir/agents (only those of want when it is
// not empty), sorted. An agent named in want that is not there is an error.
func agentDirs(dir string, want []string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "agents"))
	if err != nil {
		return nil, fmt.Errorf("openclaw: read %s: no agents directory (is this an OpenClaw state dir, ~/.openclaw?): %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if !routing.ValidID(e.Name()) {
			return nil, fmt.Errorf("openclaw: read %s: agent directory %q is not an agent id", filepath.Join(dir, "agents"), sessions.Clip(e.Name()))
		}
		if len(want) == 0 || slices.Contains(want, e.Name()) {
			out = append(out, e.Name())
		}
	}
	for _, w := range want {
		if !slices.Contains(out, w) {
			return nil, fmt.Errorf("openclaw: read %s: no agent %q", filepath.Join(dir, "agents"), sessions.Clip(w))
		}
	}
	slices.Sort(out)
	return out, nil
}

// readAgent reads one agent in the layout it has; nil when it has neither.
func readAgent(dir, agent, tmp string, o Options, rep *Report) (*AgentPlan, error) {
	db := filepath.Join(dir, "agents", agent, "agent", "openclaw-agent.sqlite")
	if _, err := os.Stat(db); err == nil {
		return readSQLiteAgent(db, agent, tmp, o, rep)
	}
	idx := filepath.Join(dir, "agents", agent, "sessions")
	if _, err := os.Stat(filepath.Join(idx, "sessions.json")); err == nil {
		return readJSONAgent(idx, agent, o, rep)
	}
	return nil, nil
}

// add appends key k (mapped from src) to the plan. A key already planned
// (OpenClaw keys differing only in case map to one gateway key) keeps the
// entry updated last; the other is counted in rep, not imported.
func (a *AgentPlan) add(src string, k sessions.KeyCopy, rep *Report) {
	it := Item{SourceKey: src, Key: k.Key, Archived: len(k.Archived)}
	if k.Entry != nil {
		it.SessionID, it.Messages = k.Entry.SessionID, k.Entry.MessageCount
	}
	if i := slices.IndexFunc(a.Keys, func(h sessions.KeyCopy) bool { return h.Key == k.Key }); i >= 0 {
		rep.add("sessionKey.caseDuplicate", "a key differing only in case from another of the same agent (one gateway key): the one updated last is imported, this one not")
		if updatedAt(k) > updatedAt(a.Keys[i]) {
			a.Keys[i], a.Items[i] = k, it
		}
		return
	}
	a.Keys = append(a.Keys, k)
	a.Items = append(a.Items, it)
}

// updatedAt is when k's entry was last updated (unix nanoseconds, 0
// without an entry).
func updatedAt(k sessions.KeyCopy) int64 {
	if k.Entry == nil {
		return 0
	}
	return k.Entry.UpdatedAt.UnixNano()
}
