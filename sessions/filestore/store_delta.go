package filestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// deltaName is the append-only change log beside sessions.json: one line
// per changed entry ({"k":key,"e":entry} or {"k":key,"d":true}, or
// {"k":key,"r":from,"e":entry} for a session moved from another key,
// RenameKey, which deletes from and puts key in one line), so that
// creating or updating a session costs one short fsynced append whatever
// the index size. Readers see the snapshot with the log applied in order;
// the log is folded into the snapshot (atomic rename, then truncated) when
// it grows past half the snapshot, and at Close. A crash between the two
// only re-applies puts and deletes the snapshot already holds.
const deltaName = "sessions.delta.jsonl"

// ChangeLogName is deltaName for tools that rewrite sessions.json under the
// store lock (doctor): after writing the merged index they empty the log.
const ChangeLogName = deltaName

// deltaFoldMin is the log size below which it is never folded.
const deltaFoldMin = 64 << 10

// deltaLine is one line of the change log.
type deltaLine struct {
	K string          `json:"k"`
	R string          `json:"r,omitempty"` // the key a moved entry leaves
	E json.RawMessage `json:"e,omitempty"` // an entry (decodeEntry)
	D bool            `json:"d,omitempty"`
}

// readDelta calls apply with each change of the change log at path, in
// order: an entry put (c) or deleted (del). It returns the log's stamp and
// the offset after its last whole line (a torn last line, from a crash
// while appending, is ignored and cut before the next append). Lines as
// encodeChangesLocked writes them are read without encoding/json.
func readDelta(path string, apply func(k string, c compactEntry, del bool)) (fileStamp, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileStamp{}, 0, nil
	}
	if err != nil {
		return fileStamp{}, 0, fmt.Errorf("sessions: open change log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileStamp{}, 0, fmt.Errorf("sessions: change log: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var (
		good    int64
		scratch = make([]byte, 0, 1024)
	)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			good += int64(len(line))
			if k, c, del, ok := scanDeltaLine(scratch, line[:len(line)-1]); ok {
				apply(k, c, del)
			} else {
				var l deltaLine
				if json.Unmarshal(bytes.TrimSpace(line), &l) == nil && l.K != "" {
					switch {
					case l.D:
						apply(l.K, nil, true)
					case l.E != nil && string(l.E) != "null":
						e, err := decodeEntry(l.E, false)
						if err != nil {
							return fileStamp{}, 0, fmt.Errorf("sessions: change log %s: line %d: %w", path, n, err)
						}
						c, err := packEntry(&e)
						if err != nil {
							return fileStamp{}, 0, fmt.Errorf("sessions: change log %s: line %d: %w", path, n, err)
						}
						if l.R != "" && l.R != l.K {
							apply(l.R, nil, true) // a move: both halves or, torn, neither
						}
						apply(l.K, c, false)
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fileStamp{}, 0, fmt.Errorf("sessions: read change log: %w", err)
		}
	}
	return stampOf(fi), good, nil
}

// scanDeltaLine reads a change log line as encodeChangesLocked writes it
// ({"k":key,"e":entry} or {"k":key,"d":true}); ok is false for any other.
func scanDeltaLine(scratch, line []byte) (k string, c compactEntry, del bool, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(`{"k":`))
	if !found {
		return "", nil, false, false
	}
	k, n, ok := jsonKey(rest)
	if !ok || k == "" {
		return "", nil, false, false
	}
	rest = rest[n:]
	if string(rest) == `,"d":true}` {
		return k, nil, true, true
	}
	e, found := bytes.CutPrefix(rest, []byte(`,"e":`))
	if !found || len(e) == 0 || e[len(e)-1] != '}' {
		return "", nil, false, false
	}
	if c, ok = compactOf(scratch, e[:len(e)-1]); !ok {
		return "", nil, false, false
	}
	return k, c, false, true
}

// encodeChangesLocked renders the log lines of the entries changed since
// the last write (what json.Marshal writes for their deltaLine).
func (s *Store) encodeChangesLocked() ([]byte, error) {
	keys := make([]string, 0, len(s.changed))
	for k := range s.changed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf []byte
	// Moves first, each one line; a key a session left is written after
	// (deleted again, or put if the batch made it a session anew).
	for _, k := range keys {
		from, ok := s.renamed[k]
		sl, live := s.slots[k]
		if !ok || !live {
			continue
		}
		line, err := json.Marshal(deltaLine{K: k, R: from, E: sl.c.appendJSON(nil)})
		if err != nil {
			return nil, fmt.Errorf("sessions: encode change: %w", err)
		}
		buf = append(append(buf, line...), '\n')
	}
	for _, k := range keys {
		if _, ok := s.renamed[k]; ok {
			if _, live := s.slots[k]; live {
				continue
			}
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("sessions: encode change: %w", err)
		}
		buf = append(buf, `{"k":`...)
		buf = append(buf, kb...)
		if sl, ok := s.slots[k]; ok {
			buf = append(buf, `,"e":`...)
			buf = sl.c.appendJSON(buf)
			buf = append(buf, "}\n"...)
		} else {
			buf = append(buf, `,"d":true}`+"\n"...)
		}
	}
	return buf, nil
}

// foldDueLocked says whether the next write should be a whole snapshot:
// when there is none yet, or the log has grown past half of it.
func (s *Store) foldDueLocked(extra int) bool {
	if !s.stamp.exists {
		return true
	}
	return s.deltaGood+int64(extra) > max(deltaFoldMin, s.stamp.size/2)
}

// appendDelta appends lines to the change log after cutting any torn tail
// back to good, and makes them durable.
func appendDelta(path string, good int64, lines []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sessions: change log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() != good {
		if err := f.Truncate(good); err != nil {
			return fmt.Errorf("sessions: change log: cut torn tail: %w", err)
		}
	}
	if _, err := f.WriteAt(lines, good); err != nil {
		_ = f.Truncate(good)
		return fmt.Errorf("sessions: change log: append: %w", err)
	}
	if err := syncDelta(f); err != nil {
		// The lines may be in the file but not on disk: cut them, so the
		// file holds none of a change its caller is told failed, and the
		// next append is written (and fsynced) where they were. Left in
		// place, a later append's successful fsync would say nothing of
		// them (the kernel reports a lost write-back once): after a power
		// loss their range could be garbage glued to that append's line,
		// which would then be skipped as bad.
		if terr := f.Truncate(good); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut back: %w", terr))
		}
		return fmt.Errorf("sessions: change log: fsync: %w", err)
	}
	return nil
}

// syncDelta fsyncs the change log ((*os.File).Sync; tests inject faults).
var syncDelta = (*os.File).Sync

// truncateDelta empties the change log after a fold.
func truncateDelta(path string) error {
	err := os.Truncate(path, 0)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("sessions: change log: truncate after fold: %w", err)
}

// ReadIndex reads an agent's index as the store sees it (sessions.json with
// its change log applied) without locking or writing; for doctor and tools.
// dir is the agent's sessions directory.
func ReadIndex(dir string) (map[string]sessions.Entry, error) {
	idx := map[string]sessions.Entry{}
	b, err := os.ReadFile(filepath.Join(dir, indexName))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("sessions: read index: %w", err)
	case len(bytes.TrimSpace(b)) > 0:
		// As a load reads it (readIndex), so doctor sees what the store sees.
		slots, err := readIndex(bytes.NewReader(b), int64(len(b)), 0)
		if err != nil {
			return nil, fmt.Errorf("sessions: read index %s: %w", filepath.Join(dir, indexName), err)
		}
		for k, sl := range slots {
			idx[k] = sl.entry()
		}
	}
	apply := func(k string, c compactEntry, del bool) {
		if del {
			delete(idx, k)
		} else {
			idx[k] = c.entry()
		}
	}
	if _, _, err := readDelta(filepath.Join(dir, deltaName), apply); err != nil {
		return nil, err
	}
	return idx, nil
}

// fold writes the whole snapshot and empties the change log, under the
// store lock (Manager.Close: a cleanly stopped store has its index whole
// in sessions.json).
func (s *Store) fold() error {
	_, unlock, err := s.lock.Acquire(context.Background())
	if err != nil {
		return fmt.Errorf("sessions: fold change log: %w", err)
	}
	defer unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.revalidateLocked(time.Now()); err != nil {
		return err
	}
	if s.deltaGood == 0 && !s.dstamp.exists {
		return nil
	}
	if s.deltaGood == 0 && s.dstamp.size == 0 {
		return nil
	}
	data, err := s.encodeLocked()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.indexPath, data); err != nil {
		return fmt.Errorf("sessions: fold change log: %w", err)
	}
	if err := truncateDelta(s.deltaPath); err != nil {
		return err
	}
	s.loaded = false // re-stat both files on next use
	return nil
}

// fileStamp identifies one version of a file written by atomic rename.
type fileStamp struct {
	exists bool
	ino    uint64
	size   int64
	mtime  time.Time
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}
