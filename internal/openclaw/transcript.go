package openclaw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
)

// A transcript of the reference system is pi's JSONL (SPEC §3.4), one
// entry per line or per transcript_events row: a session header, then
// entries chained by parentId into a tree (a rewind or an edit starts a
// branch). The gateway takes the active branch only — the chain that ends
// at the leaf — with the header rewritten to name the session's key and
// agent, so every backend loads the same context from it.

// line is what this package reads of one transcript line.
type line struct {
	Type     string          `json:"type"`
	ID       *string         `json:"id"`
	ParentID *string         `json:"parentId"`
	Message  *lineMessage    `json:"message"`
	Raw      json.RawMessage `json:"-"`
}

type lineMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// transcript is one session's transcript as it will be written.
type transcript struct {
	lines    [][]byte
	messages int
	title    string
	// lastAt is the time of the last entry (zero: none had one).
	lastAt time.Time
}

// parseLines parses the lines of a transcript (src names it in errors).
// Blank lines are skipped; a line that is not a JSON object is an error
// naming its number.
func parseLines(src string, raw [][]byte) ([]line, error) {
	out := make([]line, 0, len(raw))
	for i, b := range raw {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s: line %d is not a transcript entry: %w", src, i+1, err)
		}
		l.Raw = b
		out = append(out, l)
	}
	return out, nil
}

// activeBranch returns the header and the entries of the chain that ends
// at the last entry, root first, and how many entries it left out
// (abandoned branches, entries without an id).
func activeBranch(ls []line, rep *Report) (header *line, path []line) {
	byID := map[string]int{}
	leaf := -1
	for i := range ls {
		l := &ls[i]
		if l.Type == "session" {
			if header == nil {
				header = l
			}
			continue
		}
		if l.ID == nil || *l.ID == "" {
			rep.add("transcript.entryWithoutId", "an entry with no id is in no chain (pi v1 files): left out")
			continue
		}
		byID[*l.ID] = i
		leaf = i
	}
	seen := map[int]bool{}
	for i := leaf; i >= 0 && !seen[i]; {
		seen[i] = true
		path = append(path, ls[i])
		p := ls[i].ParentID
		if p == nil || *p == "" {
			break
		}
		j, ok := byID[*p]
		if !ok {
			rep.add("transcript.missingParent", "an entry's parent is not in the file: the chain starts at it")
			break
		}
		i = j
	}
	for a, b := 0, len(path)-1; a < b; a, b = a+1, b-1 {
		path[a], path[b] = path[b], path[a]
	}
	if n := len(byID) - len(path); n > 0 {
		rep.addN("transcript.abandonedBranch", n, "entries of branches that are not active (rewind, edit): left out, as OpenClaw leaves them out of the context")
	}
	return header, path
}

// knownTypes are the entry types the gateway's transcripts give meaning
// to; others are kept in the chain (they link it) and counted.
var knownTypes = map[string]bool{"message": true, "compaction": true}

// build makes the transcript of session id of key from its header and
// active branch.
func build(agent, key, id string, header *line, path []line, rep *Report) (transcript, error) {
	h, err := rewriteHeader(agent, key, id, header, path)
	if err != nil {
		return transcript{}, err
	}
	if header != nil {
		var hv struct {
			Version int `json:"version"`
		}
		if json.Unmarshal(header.Raw, &hv) == nil && hv.Version > 3 {
			rep.add(fmt.Sprintf("transcript.version.%d", hv.Version), "a transcript format newer than the version 3 this gateway knows: read as version 3 (check its sessions with `gateway sessions show KEY --context`)")
		}
	}
	t := transcript{lines: make([][]byte, 0, 1+len(path))}
	t.lines = append(t.lines, h)
	for _, l := range path {
		if bytes.IndexByte(l.Raw, '\n') >= 0 {
			return transcript{}, fmt.Errorf("entry %s holds a raw newline", *l.ID)
		}
		t.lines = append(t.lines, l.Raw)
		if at := entryTime(l.Raw); !at.IsZero() {
			t.lastAt = at
		}
		if !knownTypes[l.Type] {
			rep.add("transcript.entry."+l.Type, "kept in the transcript (it links the chain), not part of the gateway's model context")
			continue
		}
		if l.Type != "message" || l.Message == nil {
			continue
		}
		t.messages++
		switch l.Message.Role {
		case sessions.RoleUser:
			if t.title == "" {
				t.title = sessions.StoredTitle(contentText(l.Message.Content))
			}
		case sessions.RoleAssistant, sessions.RoleToolResult, "bashExecution":
		default:
			rep.add("transcript.role."+l.Message.Role, "a message of this role is kept, not sent to the model")
		}
	}
	return t, nil
}

// rewriteHeader returns the session line of a transcript: the source's
// header with id, version (at least 3), sessionKey and agentId set, its
// other members kept; a new one when the source has none.
func rewriteHeader(agent, key, id string, header *line, path []line) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if header != nil {
		if err := json.Unmarshal(header.Raw, &m); err != nil {
			return nil, fmt.Errorf("session header: %w", err)
		}
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	set("type", "session")
	set("id", id)
	var v int
	if json.Unmarshal(m["version"], &v) != nil || v < 3 {
		set("version", 3)
	}
	if _, ok := m["timestamp"]; !ok {
		at := time.Now().UTC()
		if len(path) > 0 {
			if t := entryTime(path[0].Raw); !t.IsZero() {
				at = t
			}
		}
		set("timestamp", at.Format(time.RFC3339Nano))
	}
	if _, ok := m["cwd"]; !ok {
		set("cwd", "")
	}
	set("sessionKey", key)
	set("agentId", agent)
	return json.Marshal(m)
}

// entryTime is an entry's timestamp (RFC 3339), zero when it has none.
func entryTime(raw []byte) time.Time {
	var w struct {
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// contentText is the text of a message's content: a string, or the text
// blocks of an array joined by newlines.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == sessions.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
