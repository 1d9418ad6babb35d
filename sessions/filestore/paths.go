package filestore

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// File names inside an agent's sessions directory (SPEC §3.1).
const (
	indexName       = "sessions.json"
	archiveName     = "archive.json"
	transcriptExt   = ".jsonl"
	lockExt         = ".lock"
	resetInfix      = ".reset."
	deletedInfix    = ".deleted."
	archiveTSLayout = "20060102T150405Z"
)

// agentSessionsDir returns <stateDir>/agents/<agentID>/sessions. The agent id
// must already be a normalised id: nothing else may become a path.
func agentSessionsDir(stateDir, agentID string) (string, error) {
	if !routing.ValidID(agentID) {
		return "", fmt.Errorf("sessions: agent id %q is not a valid id", sessions.Clip(agentID))
	}
	return filepath.Join(stateDir, "agents", agentID, "sessions"), nil
}

// transcriptPath is <dir>/<sessionID>.jsonl for a validated id.
func transcriptPath(dir, sessionID string) (string, error) {
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return "", err
	}
	return filepath.Join(dir, sessionID+transcriptExt), nil
}

// archiveTS renders t as 20261122T073900Z for archive file names (no colons,
// so the names are portable).
func archiveTS(t time.Time) string { return t.UTC().Format(archiveTSLayout) }

// parseArchiveName splits "<uuid>.jsonl.reset.<ts>" or ".deleted.<ts>" into
// its session id, kind ("reset"/"deleted") and time. ok is false for any
// other name.
func parseArchiveName(name string) (id, kind string, at time.Time, ok bool) {
	base, rest, found := strings.Cut(name, transcriptExt+".")
	if !found || sessions.CheckSessionID(base) != nil {
		return "", "", time.Time{}, false
	}
	kind, ts, found := strings.Cut(rest, ".")
	if !found || (kind != "reset" && kind != "deleted") {
		return "", "", time.Time{}, false
	}
	// A collision suffix ("-1") may follow the timestamp.
	if i := strings.IndexByte(ts, '-'); i >= 0 {
		ts = ts[:i]
	}
	t, err := time.Parse(archiveTSLayout, ts)
	if err != nil {
		return "", "", time.Time{}, false
	}
	return base, kind, t, true
}
