package filestore

import (
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
	"path/filepath"
)

// transcriptOrArchive is the seam's Transcript(id) for the files backend:
// the live transcript when its file exists or the session was never
// archived, else the archived file (<id>.jsonl.reset|deleted.<ts>) opened
// read-only, so a reset or deleted session's messages stay readable
// (appending to it fails: the session is no longer current).
func (s *Store) transcriptOrArchive(sessionID string) (*transcript.File, error) {
	live, err := transcriptPath(s.dir, sessionID)
	if err != nil {
		return nil, err
	}
	if !fileExists(live) {
		if path := s.archivedFile(sessionID); path != "" {
			hdr := transcript.Header{AgentID: s.agentID, Cwd: s.m.opts.StateDir}
			return transcript.Open(path, sessionID, hdr, nil, s.log)
		}
	}
	return s.Transcript(sessionID)
}

// archivedFile returns the newest archived transcript file of sessionID
// that still exists ("" if none), from the archive list.
func (s *Store) archivedFile(sessionID string) string {
	arch, err := s.archiveList()
	if err != nil {
		return ""
	}
	m := arch.m
	var best sessions.Archived
	for _, l := range m {
		for _, a := range l {
			id, _, _, ok := parseArchiveName(a.File)
			if !ok || filepath.Base(a.File) != a.File || id != sessionID || a.SessionID != sessionID || !a.ArchivedAt.After(best.ArchivedAt) {
				continue
			}
			if fileExists(filepath.Join(s.dir, a.File)) {
				best = a
			}
		}
	}
	if best.File == "" {
		return ""
	}
	return filepath.Join(s.dir, best.File)
}
