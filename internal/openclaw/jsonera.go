package openclaw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gateway/gateway/sessions"
)

// readJSONAgent reads an agent of the JSON-era layout: dir/sessions.json
// (read by the files backend's reader, which knows this format) and the
// transcript each entry names.
func readJSONAgent(dir, agent string, o Options, rep *Report) (*AgentPlan, error) {
	idxPath := filepath.Join(dir, "sessions.json")
	idx, err := o.ReadIndex(dir)
	if err != nil {
		return nil, fmt.Errorf("openclaw: %s: %w", idxPath, err)
	}
	a := &AgentPlan{ID: agent, Layout: LayoutJSON, Source: idxPath}
	keys := make([]string, 0, len(idx))
	for k := range idx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, src := range keys {
		key, err := mapKey(agent, src)
		if err != nil {
			unmappedKey(rep, src, err)
			continue
		}
		e := idx[src]
		sid, err := sessionID(agent, e.SessionID, rep)
		if err != nil {
			return nil, fmt.Errorf("openclaw: %s: entry %q: %w", idxPath, sessions.Clip(src), err)
		}
		file, raw, err := readTranscriptFile(dir, e)
		if err != nil {
			return nil, err
		}
		if file == "" {
			rep.add("transcript.missing", "an entry whose transcript file is not there: imported with an empty transcript")
		}
		ls, err := parseLines(filepath.Join(dir, file), dropTorn(raw, rep))
		if err != nil {
			return nil, fmt.Errorf("openclaw: %w", err)
		}
		header, path := activeBranch(ls, rep)
		t, err := build(agent, key, sid, header, path, rep)
		if err != nil {
			return nil, fmt.Errorf("openclaw: %s: %w", filepath.Join(dir, file), err)
		}
		e = mapEntry(key, e, rep)
		e.SessionID = sid
		settle(&e, t, clocks{})
		a.add(src, sessions.KeyCopy{KeyState: sessions.KeyState{Key: key, Entry: &e},
			Transcripts: map[string][][]byte{sid: t.lines}}, rep)
	}
	countArchivedFiles(dir, rep)
	return a, nil
}

// dropTorn returns the lines of a transcript file (split at '\n') without
// a torn last line: text after the last newline that is not JSON, what a
// crash mid-append leaves. It is counted in rep, as loading such a file
// ignores it (SPEC §3.4); a bad line ended by its newline stays (an error).
func dropTorn(raw [][]byte, rep *Report) [][]byte {
	if n := len(raw); n > 0 && len(bytes.TrimSpace(raw[n-1])) > 0 && !json.Valid(raw[n-1]) {
		rep.add("transcript.tornLastLine", "a last line cut short (OpenClaw stopped mid-write): left out, as loading the file leaves it out")
		return raw[:n-1]
	}
	return raw
}

// transcriptName is what a transcript file of the JSON-era layout is
// called; a name taken from an entry must look like one (it never
// becomes a path otherwise).
var transcriptName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.jsonl$`)

// readTranscriptFile reads the transcript of e in dir: the base name of
// its sessionFile when that looks like a transcript name, else
// <sessionId>.jsonl, else <sessionId>-topic-<n>.jsonl (a forum topic's).
// It returns the name read, "" when there is none.
func readTranscriptFile(dir string, e sessions.Entry) (string, [][]byte, error) {
	var cands []string
	var extra struct {
		SessionFile string `json:"sessionFile"`
	}
	if e.Extra != "" && json.Unmarshal([]byte(e.Extra), &extra) == nil && extra.SessionFile != "" {
		// A path of the machine that wrote it: only its base name counts.
		if b := filepath.Base(strings.ReplaceAll(extra.SessionFile, `\`, "/")); transcriptName.MatchString(b) {
			cands = append(cands, b)
		}
	}
	if transcriptName.MatchString(e.SessionID + ".jsonl") {
		cands = append(cands, e.SessionID+".jsonl")
		if m, _ := filepath.Glob(filepath.Join(dir, globEscape(e.SessionID)+"-topic-*.jsonl")); len(m) > 0 {
			slices.Sort(m)
			cands = append(cands, filepath.Base(m[0]))
		}
	}
	for _, c := range cands {
		b, err := os.ReadFile(filepath.Join(dir, c))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("openclaw: read transcript: %w", err)
		}
		return c, bytes.Split(b, []byte{'\n'}), nil
	}
	return "", nil, nil
}

func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

// sessionID returns id as a canonical UUID: lower-cased when that is
// enough, else one derived from agent and id (the same on every run, so a
// second import finds it).
func sessionID(agent, id string, rep *Report) (string, error) {
	if id == "" {
		return "", fmt.Errorf("no sessionId")
	}
	if u, err := uuid.Parse(id); err == nil && u.String() == strings.ToLower(id) {
		return u.String(), nil
	}
	rep.add("entry.sessionId", "not a UUID: the session gets a UUID derived from it (the same on every run)")
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("openclaw:"+agent+":"+id)).String(), nil
}

// unmappedKey counts a key the gateway has no form for, by its shape.
func unmappedKey(rep *Report, key string, err error) {
	parts := strings.Split(key, ":")
	shape := parts[0] + ":…"
	if strings.EqualFold(parts[0], "agent") && len(parts) > 2 {
		shape = "agent:<id>:" + parts[2] + ":…"
	}
	rep.add("sessionKey "+shape, fmt.Sprintf("a key the gateway has no session for (%v): not imported", err))
}

// countArchivedFiles counts the archived transcripts of dir (reset or
// deleted): the JSON-era index keeps no key for them.
func countArchivedFiles(dir string, rep *Report) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	n := 0
	for _, e := range ents {
		if strings.Contains(e.Name(), ".jsonl.reset.") || strings.Contains(e.Name(), ".jsonl.deleted.") {
			n++
		}
	}
	rep.addN("transcript.archivedFile", n, "a reset or deleted transcript (*.jsonl.reset.*, *.jsonl.deleted.*): the index names no key for it, not imported")
}
