package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Problem kinds reported by `gateway doctor`.
const (
	kindPermissions       = "permissions"
	kindIndexUnreadable   = "index-unreadable"
	kindMissingTranscript = "missing-transcript"
	kindOrphanTranscript  = "orphan-transcript"
	kindUnrenamedArchive  = "unrenamed-archive"
	kindCounterLag        = "counter-lag"
	kindStaleLock         = "stale-lock"
	kindLongHeldLock      = "long-held-lock"
)

// problem is one finding; Fixed says --fix repaired it.
type problem struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Detail string `json:"detail"`
	Fixed  bool   `json:"fixed"`
	Fix    string `json:"fix,omitempty"` // what --fix did or would do
	// fix applies the repair; nil when the problem needs a human.
	fix func(ctx context.Context) error
}

type doctorReport struct {
	StateDir  string     `json:"stateDir"`
	Problems  []*problem `json:"problems"`
	Fixed     int        `json:"fixed"`
	Remaining int        `json:"remaining"`
}

func doctorCmd(cfgPath *string) *cobra.Command {
	var fix, asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the state directory (index vs transcripts, counters, permissions, lock files); --fix repairs",
		Long: `doctor compares each agent's sessions.json with its transcripts and reports:
  missing-transcript  an entry whose transcript is gone (fix: its counters are zeroed to match)
  orphan-transcript   a transcript without an entry (fix: the entry is re-created from the
                      transcript's header; if the key already has a newer session, the orphan is
                      archived as <id>.jsonl.reset.<ts> instead)
  unrenamed-archive   an archived session whose transcript was not renamed (fix: renamed)
  counter-lag         messageCount/compactionCount behind the transcript (fix: recounted)
  index-unreadable    sessions.json is not valid JSON (fix: kept as sessions.json.corrupt.<ts>,
                      the index is rebuilt from the transcripts)
  permissions         files not 0600, directories not 0700 (fix: chmod)
  stale-lock          lock metadata left by a dead holder (fix: truncated; lock files are never deleted)
  long-held-lock      a live lock held longer than 5 minutes (reported only)
No transcript is ever deleted. Run --fix with the daemon stopped when you can: the store
lock keeps concurrent writers safe, but counters the daemon has not flushed yet may be
counted twice.
Exit code 0: healthy (or everything fixed); 1: problems remain.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			rep, err := runDoctor(cmd.Context(), cfg, fix)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, rep); err != nil {
					return err
				}
			} else {
				printDoctor(out, rep, fix)
			}
			if rep.Remaining > 0 {
				return errProblems
			}
			return nil
		},
	}
	c.Flags().BoolVar(&fix, "fix", false, "repair what can be repaired safely")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printDoctor(w io.Writer, rep *doctorReport, fix bool) {
	if len(rep.Problems) == 0 {
		fmt.Fprintf(w, "state directory %s: no problems found\n", rep.StateDir)
		return
	}
	for _, p := range rep.Problems {
		status := "PROBLEM"
		if p.Fixed {
			status = "FIXED  "
		}
		fmt.Fprintf(w, "%s %-18s %s: %s\n", status, p.Kind, p.Path, p.Detail)
		if p.Fix != "" && (p.Fixed || !fix) {
			verb := "fix:"
			if !p.Fixed {
				verb = "--fix would:"
			}
			fmt.Fprintf(w, "        %s %s\n", verb, p.Fix)
		}
	}
	fmt.Fprintf(w, "%d problem(s), %d fixed, %d remaining\n", len(rep.Problems), rep.Fixed, rep.Remaining)
}

// runDoctor inspects (and with fix, repairs) cfg's state directory.
func runDoctor(ctx context.Context, cfg *configs.Config, fix bool) (*doctorReport, error) {
	rep := &doctorReport{StateDir: cfg.StateDir, Problems: []*problem{}}
	if _, err := os.Stat(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("doctor: state directory: %w", err)
	}
	d := &doctor{cfg: cfg, now: time.Now()}
	agentsDir := filepath.Join(cfg.StateDir, "agents")
	ents, err := os.ReadDir(agentsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !routing.ValidID(e.Name()) {
			continue
		}
		dir := filepath.Join(agentsDir, e.Name(), "sessions")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		ps, err := d.checkAgent(e.Name(), dir)
		if err != nil {
			return nil, err
		}
		rep.Problems = append(rep.Problems, ps...)
	}
	// Locks before permissions: a fix of either never touches the other.
	ps, err := d.checkLocks()
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, ps...)
	ps, err = d.checkPermissions()
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, ps...)
	ps, err = d.checkStorage()
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, ps...)
	ps, err = d.checkTranscriptLines()
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, ps...)

	if fix {
		defer d.close()
		for _, p := range rep.Problems {
			if p.fix == nil {
				continue
			}
			if err := p.fix(ctx); err != nil {
				p.Detail += " (fix failed: " + err.Error() + ")"
				continue
			}
			p.Fixed = true
		}
		// Index rewrites chmod nothing, but renames and new files may need it.
		if again, err := d.checkPermissions(); err == nil {
			for _, p := range again {
				if p.fix != nil && p.fix(ctx) == nil {
					continue
				}
				rep.Problems = append(rep.Problems, p)
			}
		}
	}
	for _, p := range rep.Problems {
		if p.Fixed {
			rep.Fixed++
		} else {
			rep.Remaining++
		}
	}
	return rep, nil
}

// doctor holds what the checks share.
type doctor struct {
	cfg *configs.Config
	now time.Time
	mgr *sessions.Manager // opened on the first index repair
}

func (d *doctor) close() {
	if d.mgr != nil {
		_ = d.mgr.Close()
	}
}

// transcriptInfo is what a scan of one transcript found.
type transcriptInfo struct {
	Header      *transcriptHeader
	Messages    int
	Compactions int
	FirstUser   string
	LastAt      time.Time
	Bad         int // unparsable lines other than a torn last line
}

type transcriptHeader struct {
	Type       string    `json:"type"`
	ID         string    `json:"id"`
	Timestamp  time.Time `json:"timestamp"`
	SessionKey string    `json:"sessionKey"`
	AgentID    string    `json:"agentId"`
}

// scanTranscript reads a JSONL transcript without a line-length limit.
func scanTranscript(path string) (transcriptInfo, error) {
	var ti transcriptInfo
	f, err := os.Open(path)
	if err != nil {
		return ti, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	first := true
	for {
		line, err := r.ReadBytes('\n')
		complete := err == nil
		if len(bytes.TrimSpace(line)) > 0 {
			ti.scanLine(line, first, complete)
			first = false
		}
		if err == io.EOF {
			return ti, nil
		}
		if err != nil {
			return ti, err
		}
	}
}

func (ti *transcriptInfo) scanLine(line []byte, first, complete bool) {
	var e struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Message   json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		if complete {
			ti.Bad++
		}
		return // a torn last line is the sessions package's to cut
	}
	if first && e.Type == "session" {
		var h transcriptHeader
		if json.Unmarshal(line, &h) == nil {
			ti.Header = &h
		}
		return
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil && t.After(ti.LastAt) {
		ti.LastAt = t
	}
	switch e.Type {
	case "message":
		ti.Messages++
		if ti.FirstUser == "" {
			var m sessions.Message
			if json.Unmarshal(e.Message, &m) == nil && m.Role == sessions.RoleUser {
				ti.FirstUser = m.Text()
			}
		}
	case "compaction":
		ti.Compactions++
	}
}

// readIndex reads sessions.json as written by the sessions package.
func readIndex(path string) (map[string]sessions.Entry, error) {
	// sessions.json with its change log applied: the index as the store sees it.
	return sessions.ReadIndex(filepath.Dir(path))
}

// isTranscriptName matches "<canonical uuid>.jsonl".
func isTranscriptName(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".jsonl")
	if !ok {
		return "", false
	}
	u, err := uuid.Parse(id)
	return id, err == nil && u.String() == id
}

func (d *doctor) checkAgent(agent, dir string) ([]*problem, error) {
	var out []*problem
	indexPath := filepath.Join(dir, "sessions.json")
	idx, err := readIndex(indexPath)
	corrupt := err != nil
	if corrupt {
		p := &problem{Kind: kindIndexUnreadable, Path: indexPath, Detail: err.Error(),
			Fix: "keep it as sessions.json.corrupt.<ts> and rebuild the index from the transcripts"}
		p.fix = func(ctx context.Context) error { return d.quarantineIndex(ctx, agent, indexPath) }
		out = append(out, p)
		idx = map[string]sessions.Entry{}
	}
	archived := readArchiveIDs(filepath.Join(dir, "archive.json"))
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	transcripts := map[string]transcriptInfo{}
	var ids []string
	for _, f := range files {
		id, ok := isTranscriptName(f.Name())
		if !ok || !f.Type().IsRegular() {
			continue
		}
		ti, err := scanTranscript(filepath.Join(dir, f.Name()))
		if err != nil {
			return nil, fmt.Errorf("doctor: %w", err)
		}
		transcripts[id] = ti
		ids = append(ids, id)
	}
	sort.Strings(ids)
	byID := map[string]string{}
	keys := make([]string, 0, len(idx))
	for k, e := range idx {
		byID[e.SessionID] = k
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := idx[k]
		tpath := filepath.Join(dir, e.SessionID+".jsonl")
		ti, ok := transcripts[e.SessionID]
		if !ok {
			if e.MessageCount == 0 && e.CompactionCount == 0 {
				continue // created, nothing appended yet: the transcript comes with the first message
			}
			p := &problem{Kind: kindMissingTranscript, Path: tpath,
				Detail: fmt.Sprintf("entry %s says %d messages but its transcript is missing", k, e.MessageCount),
				Fix:    "zero the entry's counters so they match the empty transcript (the messages are lost)"}
			key, sid := k, e.SessionID
			p.fix = func(ctx context.Context) error {
				return d.editIndex(ctx, agent, indexPath, func(idx map[string]sessions.Entry) {
					if e, ok := idx[key]; ok && e.SessionID == sid {
						e.MessageCount, e.CompactionCount, e.CompactionOffset, e.ContextTokens = 0, 0, 0, 0
						e.InputTokens, e.OutputTokens, e.TotalTokens = 0, 0, 0
						idx[key] = e
					}
				})
			}
			out = append(out, p)
			continue
		}
		if e.MessageCount < ti.Messages || e.CompactionCount < ti.Compactions {
			p := &problem{Kind: kindCounterLag, Path: tpath,
				Detail: fmt.Sprintf("entry %s: messageCount %d, compactionCount %d; the transcript has %d and %d",
					k, e.MessageCount, e.CompactionCount, ti.Messages, ti.Compactions),
				Fix: "set them from the transcript"}
			key, sid, n, c := k, e.SessionID, ti.Messages, ti.Compactions
			p.fix = func(ctx context.Context) error {
				return d.editIndex(ctx, agent, indexPath, func(idx map[string]sessions.Entry) {
					if e, ok := idx[key]; ok && e.SessionID == sid {
						e.MessageCount, e.CompactionCount = max(e.MessageCount, n), max(e.CompactionCount, c)
						idx[key] = e
					}
				})
			}
			out = append(out, p)
		}
	}
	// Among orphans of one key that has no entry, the newest is re-created
	// as the current session and the others are archived.
	winner := map[string]string{}
	for _, id := range ids {
		ti := transcripts[id]
		if _, ok := byID[id]; ok || ti.Header == nil || ti.Header.ID != id {
			continue
		}
		pk, err := routing.Parse(ti.Header.SessionKey)
		if err != nil || pk.Agent != agent {
			continue
		}
		k := pk.String()
		if _, ok := idx[k]; ok {
			continue
		}
		if w, ok := winner[k]; !ok || transcripts[w].LastAt.Before(ti.LastAt) {
			winner[k] = id
		}
	}
	for _, id := range ids {
		if _, ok := byID[id]; ok {
			continue
		}
		out = append(out, d.orphan(agent, dir, indexPath, id, transcripts[id], idx, archived, winner))
	}
	return out, nil
}

// readArchiveIDs maps archived session ids to their archived file names
// (archive.json: key -> list of records).
func readArchiveIDs(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var arch map[string][]sessions.Archived
	if json.Unmarshal(b, &arch) != nil {
		return out
	}
	for _, l := range arch {
		for _, a := range l {
			out[a.SessionID] = a.File
		}
	}
	return out
}

// orphan classifies a transcript that no entry points at.
func (d *doctor) orphan(agent, dir, indexPath, id string, ti transcriptInfo, idx map[string]sessions.Entry,
	archived, winner map[string]string) *problem {
	path := filepath.Join(dir, id+".jsonl")
	if name, ok := archived[id]; ok && name != "" && filepath.Base(name) == name {
		dst := filepath.Join(dir, name)
		p := &problem{Kind: kindUnrenamedArchive, Path: path,
			Detail: "archived in archive.json as " + name + " but the transcript was not renamed",
			Fix:    "rename it to " + name}
		p.fix = func(ctx context.Context) error {
			if _, err := os.Lstat(dst); err == nil {
				return fmt.Errorf("%s exists", name)
			}
			return renameSync(path, dst)
		}
		return p
	}
	p := &problem{Kind: kindOrphanTranscript, Path: path}
	h := ti.Header
	var key routing.Key
	var kerr error
	if h != nil {
		key, kerr = routing.Parse(h.SessionKey)
	}
	switch {
	case h == nil || h.ID != id:
		p.Detail = fmt.Sprintf("transcript without an entry and without a usable header (%d messages)", ti.Messages)
		return p // needs a human; never deleted
	case kerr != nil || key.Agent != agent:
		p.Detail = fmt.Sprintf("transcript without an entry; its header key %q does not belong to agent %s", h.SessionKey, agent)
		return p
	}
	cur, hasEntry := idx[key.String()]
	if w := winner[key.String()]; hasEntry || w != id {
		current := cur.SessionID
		if !hasEntry {
			current = w + " (newer orphan, re-created)"
		}
		name := id + ".jsonl.reset." + d.now.UTC().Format("20060102T150405Z")
		p.Detail = fmt.Sprintf("transcript of %s without an entry; the key's current session is %s", key, current)
		p.Fix = "archive it as " + name + " (kept, recoverable)"
		p.fix = func(ctx context.Context) error { return renameSync(path, filepath.Join(dir, name)) }
		return p
	}
	p.Detail = fmt.Sprintf("transcript of %s (%d messages) without an entry", key, ti.Messages)
	p.Fix = "re-create the entry from the transcript's header"
	entry := entryFromTranscript(key, id, ti, d.now)
	p.fix = func(ctx context.Context) error {
		return d.editIndex(ctx, agent, indexPath, func(idx map[string]sessions.Entry) {
			if _, ok := idx[key.String()]; !ok {
				idx[key.String()] = entry
			}
		})
	}
	return p
}

// entryFromTranscript rebuilds an index entry from a scanned transcript.
func entryFromTranscript(key routing.Key, id string, ti transcriptInfo, now time.Time) sessions.Entry {
	started := ti.Header.Timestamp
	if started.IsZero() {
		started = now
	}
	last := ti.LastAt
	if last.IsZero() {
		last = started
	}
	title := strings.Join(strings.Fields(ti.FirstUser), " ")
	if r := []rune(title); len(r) > 30 {
		title = string(r[:30])
	}
	e := sessions.Entry{
		SessionKey: key.String(), SessionID: id, CreatedAt: started, SessionStartedAt: started,
		LastInteractionAt: last, UpdatedAt: now, Title: title, Channel: key.Channel,
		LastChannel: key.Channel, LastAccountID: key.Account, MessageCount: ti.Messages,
		CompactionCount: ti.Compactions,
	}
	if key.Kind != "" {
		e.ChatType = string(key.Kind)
	}
	return e
}

func renameSync(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
