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
// per changed entry ({"k":key,"e":entry} or {"k":key,"d":true}), so that
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
	E *sessions.Entry `json:"e,omitempty"`
	D bool            `json:"d,omitempty"`
}

// readDelta applies the change log at path to slots. It returns the log's
// stamp and the offset after its last whole line (a torn last line, from
// a crash while appending, is ignored and cut before the next append).
func readDelta(path string, apply func(deltaLine)) (fileStamp, int64, error) {
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
	var good int64
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			good += int64(len(line))
			var l deltaLine
			if json.Unmarshal(bytes.TrimSpace(line), &l) == nil && l.K != "" {
				apply(l)
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

// applyDeltaLine applies one log line to a plain index map.
func applyDeltaLine(idx map[string]sessions.Entry, l deltaLine) {
	switch {
	case l.D:
		delete(idx, l.K)
	case l.E != nil:
		idx[l.K] = *l.E
	}
}

// encodeChangesLocked renders the log lines of the entries changed since
// the last write.
func (s *Store) encodeChangesLocked() ([]byte, error) {
	keys := make([]string, 0, len(s.changed))
	for k := range s.changed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		l := deltaLine{K: k, D: true}
		if sl, ok := s.slots[k]; ok {
			e := sl.e
			l = deltaLine{K: k, E: &e}
		}
		b, err := json.Marshal(l)
		if err != nil {
			return nil, fmt.Errorf("sessions: encode change: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
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
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sessions: change log: fsync: %w", err)
	}
	return nil
}

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
		if err := json.Unmarshal(b, &idx); err != nil {
			legacy := map[string]legacyEntry{}
			if json.Unmarshal(b, &legacy) != nil {
				return nil, fmt.Errorf("sessions: read index %s: %w", filepath.Join(dir, indexName), err)
			}
			for k, e := range legacy {
				idx[k] = sessions.Entry(e)
			}
		}
	}
	if _, _, err := readDelta(filepath.Join(dir, deltaName), func(l deltaLine) { applyDeltaLine(idx, l) }); err != nil {
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
