package filestore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// archiveLogName is the append-only change log beside archive.json: one
// line per key whose archive history changed, {"k":key,"l":[records]}
// (its whole new list, newest first, at most MaxArchivedPerKey; an empty
// list forgets the key). Readers see archive.json with the log applied in
// order; the log is folded into archive.json (atomic rename, then
// truncated) once it grows past half of it. A crash between the two only
// re-applies lists the snapshot already holds. Before it, every reset,
// delete or switch read, decoded and rewrote the whole list: a busy bot's
// month of daily resets (20 records a key, 10,000 keys, 65 MB) made each
// reset cost 1.5 s under the store lock
// (TestArchiveChangeCostDoesNotGrowWithTheList).
const archiveLogName = "archive.delta.jsonl"

// archiveFoldMin is the log size below which it is never folded.
const archiveFoldMin = 64 << 10

// archiveLine is one line of the archive change log.
type archiveLine struct {
	K string              `json:"k"`
	L []sessions.Archived `json:"l"`
}

// archiveState is an archive list as read from its files: m is shared
// and never changed in place (a change builds a new map), snap and log
// the files' stamps when read, good the log's length in whole lines.
type archiveState struct {
	m         map[string][]sessions.Archived
	snap, log fileStamp
	good      int64
}

// archiveLogPath is the change log of the archive list at path.
func archiveLogPath(path string) string { return filepath.Join(filepath.Dir(path), archiveLogName) }

// readArchiveFile reads the archive list at path (archive.json) with its
// change log applied.
func readArchiveFile(path string) (map[string][]sessions.Archived, error) {
	st, err := readArchiveState(path)
	return st.m, err
}

// readArchiveState reads the archive list at path and its change log,
// each stamped before it is read (a change after the stamp is seen as one
// at the next look).
func readArchiveState(path string) (archiveState, error) {
	st := archiveState{m: map[string][]sessions.Archived{}}
	if fi, err := os.Stat(path); err == nil {
		st.snap = stampOf(fi)
	}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("sessions: read archive list: %w", err)
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &st.m); err != nil {
			return st, fmt.Errorf("sessions: read archive list %s: %w", path, err)
		}
	}
	f, err := os.Open(archiveLogPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("sessions: read archive log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("sessions: read archive log: %w", err)
	}
	st.log = stampOf(fi)
	r := bufio.NewReaderSize(io.LimitReader(f, fi.Size()), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			st.good += int64(len(line))
			var l archiveLine
			// A line that does not decode is skipped: the key keeps its
			// previous list (doctor's orphan check finds its transcript).
			if json.Unmarshal(line, &l) == nil && l.K != "" {
				if len(l.L) == 0 {
					delete(st.m, l.K)
				} else {
					st.m[l.K] = l.L
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return st, nil // a torn last line (a crash while appending) is not counted
		}
		if err != nil {
			return st, fmt.Errorf("sessions: read archive log: %w", err)
		}
	}
}

// archiveList is the store's archive list, read again only when its files
// changed since this process last read or wrote them.
func (s *Store) archiveList() (archiveState, error) {
	var snap, log fileStamp
	if fi, err := os.Stat(s.archivePath); err == nil {
		snap = stampOf(fi)
	}
	if fi, err := os.Stat(archiveLogPath(s.archivePath)); err == nil {
		log = stampOf(fi)
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	if s.arch.m != nil && s.arch.snap == snap && s.arch.log == log {
		return s.arch, nil
	}
	st, err := readArchiveState(s.archivePath)
	if err != nil {
		s.arch = archiveState{}
		return st, err
	}
	s.arch = st
	return st, nil
}

// writeArchive writes the keys changed in tx's archive list: their lines
// appended to the change log, or the whole list as archive.json when the
// log is due for a fold. The store's cached list becomes tx's on success
// and is dropped on failure.
func (tx *txn) writeArchive() error {
	s := tx.s
	err := tx.writeArchiveFiles()
	s.amu.Lock()
	defer s.amu.Unlock()
	s.arch = archiveState{}
	if err != nil {
		return err
	}
	st := archiveState{m: tx.archive, good: tx.archBase.good + int64(len(tx.archLines))}
	if tx.archFolded {
		st.good = 0
	}
	if fi, serr := os.Stat(s.archivePath); serr == nil {
		st.snap = stampOf(fi)
	} else if !errors.Is(serr, os.ErrNotExist) {
		return nil
	}
	if fi, serr := os.Stat(archiveLogPath(s.archivePath)); serr == nil {
		st.log = stampOf(fi)
	} else if !errors.Is(serr, os.ErrNotExist) {
		return nil
	}
	s.arch = st
	return nil
}

func (tx *txn) writeArchiveFiles() error {
	keys := slices.Sorted(maps.Keys(tx.archChanged))
	var lines []byte
	for _, k := range keys {
		b, err := json.Marshal(archiveLine{K: k, L: tx.archive[k]})
		if err != nil {
			return fmt.Errorf("sessions: encode archive list: %w", err)
		}
		lines = append(append(lines, b...), '\n')
	}
	tx.archLines = lines
	logPath := archiveLogPath(tx.s.archivePath)
	if total := tx.archBase.good + int64(len(lines)); total < archiveFoldMin || total < tx.archBase.snap.size/2 {
		return appendDelta(logPath, tx.archBase.good, lines)
	}
	b, err := json.Marshal(tx.archive)
	if err != nil {
		return fmt.Errorf("sessions: encode archive list: %w", err)
	}
	if err := writeFileAtomic(tx.s.archivePath, b); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	tx.archFolded = true
	if err := truncateDelta(logPath); err != nil {
		return fmt.Errorf("sessions: archive log: %w", err)
	}
	return nil
}
