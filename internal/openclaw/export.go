package openclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gateway/gateway/internal/atomicfile"
	"github.com/gateway/gateway/sessions"
)

// ExportResult counts what Export wrote.
type ExportResult struct {
	Agents      int `json:"agents"`
	Sessions    int `json:"sessions"`
	Archived    int `json:"archived"`
	Transcripts int `json:"transcripts"`
}

// ourOnly are the members of our entries that mean nothing to the
// reference system (a byte offset into our own file).
var ourOnly = []string{"compactionOffset"}

// clockMembers are written as epoch milliseconds, as the reference
// system's JSON-era index keeps them.
var clockMembers = []string{"createdAt", "sessionStartedAt", "lastInteractionAt", "updatedAt"}

// Export writes the sessions of from (only agents' when not empty) into
// dir in the reference system's JSON-era layout, which its own doctor
// migrates into its SQLite state: agents/<id>/sessions/sessions.json (key
// → entry, clocks in epoch milliseconds, the members our entries kept
// from it written back) and one <sessionId>.jsonl per transcript
// (archived ones as <sessionId>.jsonl.reset.<ts>). It refuses to write
// over an existing sessions.json.
func Export(ctx context.Context, from sessions.Exporter, dir string, agents []string) (ExportResult, error) {
	var res ExportResult
	all, err := from.ExportAgents(ctx)
	if err != nil {
		return res, fmt.Errorf("openclaw: export: %w", err)
	}
	for _, w := range agents {
		if !slices.Contains(all, w) {
			return res, fmt.Errorf("openclaw: export: no agent %q in the %s state", sessions.Clip(w), from.Kind())
		}
	}
	for _, a := range all {
		if len(agents) > 0 && !slices.Contains(agents, a) {
			continue
		}
		if err := exportAgent(ctx, from, dir, a, &res); err != nil {
			return res, err
		}
		res.Agents++
	}
	return res, nil
}

func exportAgent(ctx context.Context, from sessions.Exporter, dir, agent string, res *ExportResult) error {
	sdir := filepath.Join(dir, "agents", agent, "sessions")
	idxPath := filepath.Join(sdir, "sessions.json")
	if _, err := os.Stat(idxPath); err == nil {
		return fmt.Errorf("openclaw: export: %s exists: export into an empty directory", idxPath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("openclaw: export: %w", err)
	}
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return fmt.Errorf("openclaw: export: %w", err)
	}
	keys, err := from.ExportKeys(ctx, agent)
	if err != nil {
		return fmt.Errorf("openclaw: export %s: %w", agent, err)
	}
	idx := map[string]json.RawMessage{}
	for _, k := range keys {
		for _, ref := range k.Refs() {
			name := ref.SessionID + ".jsonl"
			if ref.File != "" {
				name = archivedName(ref, k)
			}
			lines, err := from.ExportTranscript(ctx, agent, ref)
			if err != nil {
				return fmt.Errorf("openclaw: export %s/%s: %w", agent, k.Key, err)
			}
			if len(lines) == 0 {
				continue
			}
			if err := atomicfile.WriteFile(filepath.Join(sdir, name), append(bytes.Join(lines, []byte{'\n'}), '\n'), 0o600); err != nil {
				return fmt.Errorf("openclaw: export %s/%s: %w", agent, k.Key, err)
			}
			res.Transcripts++
		}
		res.Archived += len(k.Archived)
		if k.Entry == nil {
			continue
		}
		b, err := entryJSON(*k.Entry)
		if err != nil {
			return fmt.Errorf("openclaw: export %s/%s: %w", agent, k.Key, err)
		}
		idx[k.Key] = b
		res.Sessions++
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("openclaw: export %s: %w", agent, err)
	}
	if err := atomicfile.WriteFile(idxPath, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("openclaw: export %s: %w", agent, err)
	}
	return nil
}

// archivedName is the file of an archived transcript: the name the files
// backend gave it when it is one of the reference system's form, else
// <sessionId>.jsonl.reset.<ts>.
func archivedName(ref sessions.TranscriptRef, k sessions.KeyState) string {
	if transcriptArchiveName(ref.File) {
		return ref.File
	}
	at := time.Now().UTC()
	for _, a := range k.Archived {
		if a.SessionID == ref.SessionID {
			at = a.ArchivedAt.UTC()
		}
	}
	return ref.SessionID + ".jsonl.reset." + at.Format("2006-01-02T15-04-05.000Z")
}

func transcriptArchiveName(name string) bool {
	base, _, ok := bytes.Cut([]byte(name), []byte(".jsonl."))
	return ok && transcriptName.Match(append(base, ".jsonl"...)) && filepath.Base(name) == name
}

// entryJSON is e as the reference system's index holds an entry: our
// members with the clocks in epoch milliseconds, the members we kept from
// it (Extra) beside them, and none of ours it has no use for.
func entryJSON(e sessions.Entry) (json.RawMessage, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if e.Extra != "" {
		if err := json.Unmarshal([]byte(e.Extra), &m); err != nil {
			return nil, fmt.Errorf("unknown members: %w", err)
		}
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range ourOnly {
		delete(m, k)
	}
	for i, t := range []time.Time{e.CreatedAt, e.SessionStartedAt, e.LastInteractionAt, e.UpdatedAt} {
		if t.IsZero() {
			delete(m, clockMembers[i])
		} else {
			m[clockMembers[i]] = t.UnixMilli()
		}
	}
	return json.Marshal(m)
}
