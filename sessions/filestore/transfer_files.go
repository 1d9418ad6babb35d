package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Transfer is the files backend's side of a migration (see
// seam_transfer.go): it reads and writes sessions.json, archive.json and the
// transcripts under the state dir of its Manager. Entries go through the
// store's commit path, so the index keeps exactly today's format;
// transcripts are written byte for byte, 0600, atomically. Open the
// Manager Passive (no maintenance, no counter repair) while migrating.
type Transfer struct{ m *Manager }

var _ sessions.Importer = (*Transfer)(nil)

// Transfer returns m's side of a migration.
func (m *Manager) Transfer() *Transfer { return &Transfer{m: m} }

// Kind is "files".
func (t *Transfer) Kind() string { return "files" }

// ExportAgents lists the agents whose sessions directory holds an index,
// a change log or an archive list.
func (t *Transfer) ExportAgents(ctx context.Context) ([]string, error) {
	des, err := os.ReadDir(filepath.Join(t.m.StateDir(), "agents"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: export agents: %w", err)
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() || !routing.ValidID(de.Name()) {
			continue
		}
		dir := filepath.Join(t.m.StateDir(), "agents", de.Name(), "sessions")
		for _, name := range []string{indexName, deltaName, archiveName, archiveLogName} {
			if fileExists(filepath.Join(dir, name)) {
				out = append(out, de.Name())
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ExportKeys returns every key of agentID's index and archive list.
func (t *Transfer) ExportKeys(ctx context.Context, agentID string) ([]sessions.KeyState, error) {
	st, err := t.m.Store(agentID)
	if err != nil {
		return nil, fmt.Errorf("sessions: export %s: %w", agentID, err)
	}
	entries, err := st.List()
	if err != nil {
		return nil, fmt.Errorf("sessions: export %s: %w", agentID, err)
	}
	arch, err := readArchiveFile(st.archivePath)
	if err != nil {
		return nil, fmt.Errorf("sessions: export %s: %w", agentID, err)
	}
	byKey := make(map[string]*sessions.KeyState, len(entries)+len(arch))
	for i := range entries {
		e := entries[i]
		byKey[e.SessionKey] = &sessions.KeyState{Key: e.SessionKey, Entry: &e}
	}
	for k, l := range arch {
		ks := byKey[k]
		if ks == nil {
			ks = &sessions.KeyState{Key: k}
			byKey[k] = ks
		}
		ks.Archived = l
	}
	out := make([]sessions.KeyState, 0, len(byKey))
	for _, ks := range byKey {
		out = append(out, *ks)
	}
	slices.SortFunc(out, func(a, b sessions.KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// transcriptFile is the path of ref in dir: <id>.jsonl, or the archived
// file, whose name must be one the store writes for that session id.
func transcriptFile(dir string, ref sessions.TranscriptRef) (string, error) {
	if ref.File == "" {
		return transcriptPath(dir, ref.SessionID)
	}
	id, _, _, ok := parseArchiveName(ref.File)
	if !ok || id != ref.SessionID || !plainArchiveName(ref.File) {
		return "", fmt.Errorf("sessions: archived transcript %q is not a transcript name of session %q", sessions.Clip(ref.File), sessions.Clip(ref.SessionID))
	}
	return filepath.Join(dir, ref.File), nil
}

// plainArchiveName reports a name that stays in its directory: no path
// separator, and only digits after a collision suffix's '-'.
func plainArchiveName(name string) bool {
	if strings.ContainsAny(name, `/\`) || filepath.Base(name) != name {
		return false
	}
	ts := name[strings.LastIndexByte(name, '.')+1:]
	if _, suffix, ok := strings.Cut(ts, "-"); ok {
		_, err := strconv.ParseUint(suffix, 10, 32)
		return err == nil
	}
	return true
}

// ExportTranscript reads one transcript's lines. A torn last line (an
// append cut by a crash, which loading ignores) is left out; any other line
// that is not JSON is an error naming it: `gateway doctor --fix` moves such
// lines to a quarantine file first.
func (t *Transfer) ExportTranscript(ctx context.Context, agentID string, ref sessions.TranscriptRef) ([][]byte, error) {
	st, err := t.m.Store(agentID)
	if err != nil {
		return nil, fmt.Errorf("sessions: export transcript: %w", err)
	}
	path, err := transcriptFile(st.dir, ref)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: export transcript: %w", err)
	}
	return splitTranscript(path, data)
}

// splitTranscript cuts a transcript into its lines (sharing data).
func splitTranscript(path string, data []byte) ([][]byte, error) {
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'})+1)
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !json.Valid(line) {
			if !complete {
				break // torn last line
			}
			return nil, fmt.Errorf("sessions: transcript %s: line %d is not JSON (run `gateway doctor --fix` to quarantine it)", path, n)
		}
		lines = append(lines, line[:len(line):len(line)])
	}
	return lines, nil
}

// ImportKey writes k: first the transcripts (atomically, 0600), then the
// entry and the archive list in one durable commit of the index, so a
// crash leaves at worst transcripts no entry names yet.
func (t *Transfer) ImportKey(ctx context.Context, agentID string, k sessions.KeyCopy) error {
	st, err := t.m.Store(agentID)
	if err != nil {
		return fmt.Errorf("sessions: import: %w", err)
	}
	key, err := routing.Parse(k.Key)
	if err != nil {
		return fmt.Errorf("sessions: import %q: %w", sessions.Clip(k.Key), err)
	}
	if key.Agent != agentID {
		return fmt.Errorf("sessions: import %q: key of agent %q, not %q", sessions.Clip(k.Key), key.Agent, agentID)
	}
	if k.Entry != nil && k.Entry.SessionKey != k.Key {
		return fmt.Errorf("sessions: import %q: its entry names key %q", sessions.Clip(k.Key), sessions.Clip(k.Entry.SessionKey))
	}
	arch := nameArchives(k.Archived)
	refs := sessions.KeyState{Key: k.Key, Entry: k.Entry, Archived: arch}.Refs()
	for _, ref := range refs {
		path, err := transcriptFile(st.dir, ref)
		if err != nil {
			return fmt.Errorf("sessions: import %s: %w", k.Key, err)
		}
		lines, ok := k.Transcripts[ref.SessionID]
		if !ok {
			continue
		}
		if err := writeTranscriptLines(path, lines); err != nil {
			return fmt.Errorf("sessions: import %s: %w", k.Key, err)
		}
		st.tcache.drop(ref.SessionID)
	}
	return st.commit(ctx, func(o *opTx) error {
		if k.Entry == nil {
			o.del(k.Key)
		} else {
			o.put(k.Key, *k.Entry)
		}
		o.setArchived(k.Key, arch)
		return nil
	})
}

// writeTranscriptLines replaces path with lines; no lines removes it.
func writeTranscriptLines(path string, lines [][]byte) error {
	if len(lines) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	size := len(lines)
	for _, l := range lines {
		size += len(l)
	}
	buf := make([]byte, 0, size)
	for _, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return fmt.Errorf("transcript %s: a line holds a newline", filepath.Base(path))
		}
		buf = append(append(buf, l...), '\n')
	}
	return writeFileAtomic(path, buf)
}

// nameArchives gives every archived session without a file name the one
// the store would have written when archiving it (<id>.jsonl.reset.<ts>,
// .deleted. for a deleted one), unique within the list.
func nameArchives(l []sessions.Archived) []sessions.Archived {
	out := slices.Clone(l)
	used := map[string]bool{}
	for _, a := range out {
		used[a.File] = a.File != ""
	}
	for i, a := range out {
		if a.File != "" {
			continue
		}
		infix := resetInfix
		if a.Deleted {
			infix = deletedInfix
		}
		base := a.SessionID + transcriptExt + infix + archiveTS(a.ArchivedAt)
		name := base
		for n := 1; used[name]; n++ {
			name = base + "-" + strconv.Itoa(n)
		}
		used[name] = true
		out[i].File = name
	}
	return out
}
