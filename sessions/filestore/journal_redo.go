package filestore

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions/transcript"
)

// Redo records (issue 21). A durable transcript append (a turn's reply)
// does not fsync its transcript: the journal writes the appended bytes,
// with every byte the file got since its last durable point (the turn's
// inputs, appended lazily), as one "redo" line, and the append waits for
// the journal's fsync, which it shares with every other session's appends
// and the accepts of the same moment. The transcript file gets the same
// bytes without an fsync. A start replays the redo lines whose bytes a
// transcript lacks (a power loss, not a killed process: the kernel keeps
// what a dead process wrote) and fsyncs those files. A checkpoint fsyncs
// the transcripts behind the redo lines in the background once they hold
// redoCheckpointBytes or are redoCheckpointAge old; the journal's rewrite
// (compaction) keeps the redo lines not covered by an fsync yet, so the
// journal only grows by what a checkpoint has not covered.
const (
	redoCheckpointBytes = 4 << 20
	redoCheckpointAge   = 30 * time.Second
	// redoFilesKeep bounds the files whose durable end is remembered
	// without pending redo lines; one past it is forgotten (its next
	// durable append fsyncs the file once more).
	redoFilesKeep = 4096
)

// redoState is the journal's part of transcript durability; the Journal's
// mu guards it.
type redoState struct {
	files   map[string]*redoFile // by path relative to the state directory
	pending int64                // bytes of redo lines no fsync covers yet
	since   time.Time            // when the oldest of them was written
	replay  []journalLine        // redo lines read at open, for open to apply
}

// redoFile is what the journal knows of one transcript file.
type redoFile struct {
	id    uint64     // inodeOf of the file
	end   int64      // its first end bytes are durable: fsynced or in lines
	lines []redoLine // redo lines no fsync of the file covers yet
}

type redoLine struct {
	off  int64
	data string
}

func (l redoLine) end() int64 { return l.off + int64(len(l.data)) }

var _ transcript.Committer = (*Journal)(nil)

// root is the state directory (the journal lives in <root>/ingress).
func (j *Journal) root() string { return filepath.Dir(filepath.Dir(j.path)) }

// redoRel is path relative to the state directory; false for a path
// outside it.
func (j *Journal) redoRel(path string) (string, bool) {
	rel, err := filepath.Rel(j.root(), path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// Commit implements transcript.Committer: it writes the bytes from the
// file's durable end to the end of b as one redo line. It declines (the
// transcript fsyncs itself) when the journal cannot take the line, when it
// does not know the file's durable end yet (the first durable append of a
// file in this process), or when the file is not the one it knew.
func (j *Journal) Commit(path string, fi os.FileInfo, r io.ReaderAt, at int64, b []byte) (func() error, bool) {
	rel, ok := j.redoRel(path)
	if !ok || j.openErr != nil {
		return nil, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	rf := j.redo.files[rel]
	id := inodeOf(fi)
	if rf == nil || rf.id != id || at < rf.end || at-rf.end > j.redoMax ||
		j.closed || j.fault != nil || len(j.backlog) > 0 {
		if rf != nil && rf.id != id {
			j.dropRedoLocked(rel, rf)
		}
		return nil, false
	}
	data := b
	if at > rf.end {
		data = make([]byte, at-rf.end+int64(len(b)))
		if _, err := r.ReadAt(data[:at-rf.end], rf.end); err != nil {
			return nil, false
		}
		copy(data[at-rf.end:], b)
	}
	l := redoLine{off: rf.end, data: string(data)}
	w, err := j.writeLocked(journalLine{Op: "redo", Path: rel, FileID: id, Off: l.off, Data: l.data}, true)
	if err != nil {
		return nil, false
	}
	rf.lines = append(rf.lines, l)
	rf.end = l.end()
	if j.redo.pending == 0 {
		j.redo.since = j.now()
	}
	j.redo.pending += int64(len(l.data))
	if j.redo.pending > j.redoMax {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return func() error { return j.syncTo(w) }, true
}

// Synced implements transcript.Committer: an fsync made the file's first
// end bytes durable, and every redo line within them is no longer needed.
func (j *Journal) Synced(path string, end int64) {
	rel, ok := j.redoRel(path)
	if !ok || j.openErr != nil {
		return
	}
	id := uint64(0)
	if fi, err := os.Stat(path); err == nil {
		id = inodeOf(fi)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	rf := j.redo.files[rel]
	if rf != nil && rf.id != id {
		j.dropRedoLocked(rel, rf)
		rf = nil
	}
	if rf == nil {
		if j.redo.files == nil {
			j.redo.files = map[string]*redoFile{}
		}
		j.trimRedoFilesLocked()
		rf = &redoFile{id: id}
		j.redo.files[rel] = rf
	}
	rf.end = max(rf.end, end)
	j.syncedLocked(rf, end)
}

// syncedLocked drops rf's redo lines an fsync up to end covers.
func (j *Journal) syncedLocked(rf *redoFile, end int64) {
	n := 0
	for n < len(rf.lines) && rf.lines[n].end() <= end {
		j.redo.pending -= int64(len(rf.lines[n].data))
		n++
	}
	rf.lines = slices.Delete(rf.lines, 0, n)
	if j.redo.pending <= 0 {
		j.redo.pending, j.redo.since = 0, time.Time{}
	}
}

// dropRedoLocked forgets a file (replaced, archived after an fsync).
func (j *Journal) dropRedoLocked(rel string, rf *redoFile) {
	j.syncedLocked(rf, rf.end)
	delete(j.redo.files, rel)
}

// trimRedoFilesLocked forgets files without pending lines once more than
// redoFilesKeep are known.
func (j *Journal) trimRedoFilesLocked() {
	if len(j.redo.files) < redoFilesKeep {
		return
	}
	for rel, rf := range j.redo.files {
		if len(rf.lines) == 0 {
			delete(j.redo.files, rel)
			if len(j.redo.files) < redoFilesKeep/2 {
				return
			}
		}
	}
}

// settleTranscript makes the transcript at path durable and forgets it
// before it is renamed (archived): redo lines name a file by its path.
func (j *Journal) settleTranscript(path string) error {
	rel, ok := j.redoRel(path)
	if !ok || j.openErr != nil {
		return nil
	}
	j.mu.Lock()
	rf := j.redo.files[rel]
	pending := rf != nil && len(rf.lines) > 0
	j.mu.Unlock()
	if rf == nil {
		return nil
	}
	if pending {
		if err := fsyncFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	j.mu.Lock()
	if j.redo.files[rel] == rf {
		j.dropRedoLocked(rel, rf)
	}
	j.mu.Unlock()
	return nil
}

// checkpoint fsyncs the transcripts behind pending redo lines when they
// are due (all: regardless), then rewrites the journal without them.
func (j *Journal) checkpoint(all bool) {
	type target struct {
		rel string
		rf  *redoFile
		end int64
	}
	j.mu.Lock()
	due := j.redo.pending > j.redoMax ||
		j.redo.pending > 0 && j.now().Sub(j.redo.since) > redoCheckpointAge
	if j.closed || j.redo.pending == 0 || !(all || due) {
		j.mu.Unlock()
		return
	}
	snap := j.now()
	var ts []target
	for rel, rf := range j.redo.files {
		if n := len(rf.lines); n > 0 {
			ts = append(ts, target{rel, rf, rf.lines[n-1].end()})
		}
	}
	j.mu.Unlock()
	var synced []target
	for _, t := range ts {
		err := fsyncFile(filepath.Join(j.root(), filepath.FromSlash(t.rel)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			j.log.Warn("journal checkpoint: transcript fsync failed", zap.String("path", t.rel), zap.Error(err))
			continue
		}
		// A file gone was deleted: its redo lines must not bring it back.
		synced = append(synced, t)
	}
	j.mu.Lock()
	for _, t := range synced {
		if j.redo.files[t.rel] == t.rf {
			j.syncedLocked(t.rf, t.end)
		}
	}
	if j.redo.pending > 0 {
		// What is left was written after the snapshot (or failed its
		// fsync and waits one more period): the age counts from there,
		// else every tick would checkpoint again.
		if snap.After(j.redo.since) {
			j.redo.since = snap
		}
	}
	j.mu.Unlock()
	j.compactRedo()
}

// compactRedo rewrites the journal once it grew past compactMin, even
// with records pending (a checkpoint's point is to shed its redo lines).
func (j *Journal) compactRedo() {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed || j.fault != nil || j.size-j.compacted <= j.compactMin {
		return
	}
	if err := j.compactLocked(); err != nil {
		j.log.Warn("journal compaction failed", zap.Error(err))
	}
}

// encodeRedoLocked writes the pending redo lines for the journal's rewrite.
func (j *Journal) encodeRedoLocked(enc interface{ Encode(any) error }) error {
	rels := make([]string, 0, len(j.redo.files))
	for rel, rf := range j.redo.files {
		if len(rf.lines) > 0 {
			rels = append(rels, rel)
		}
	}
	slices.Sort(rels)
	for _, rel := range rels {
		rf := j.redo.files[rel]
		for _, l := range rf.lines {
			if err := enc.Encode(journalLine{Op: "redo", Path: rel, FileID: rf.id, Off: l.off, Data: l.data}); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyRedo runs at open, after the journal's replay: it restores the
// bytes of every redo line its transcript lacks (lost or torn by a power
// loss), fsyncs those transcripts and remembers their durable end. A
// transcript gone or replaced is skipped: it was deleted, archived or
// rewritten after an fsync. It reports whether there were redo lines.
func (j *Journal) applyRedo() bool {
	if len(j.redo.replay) == 0 {
		return false
	}
	var order []string
	byPath := map[string][]journalLine{}
	for _, l := range j.redo.replay {
		if _, ok := byPath[l.Path]; !ok {
			order = append(order, l.Path)
		}
		byPath[l.Path] = append(byPath[l.Path], l)
	}
	j.redo.replay = nil
	if j.redo.files == nil {
		j.redo.files = map[string]*redoFile{}
	}
	for _, rel := range order {
		ls := byPath[rel]
		rf, err := j.applyRedoFile(rel, ls)
		if err != nil {
			// Kept: the journal's rewrite carries them to the next start.
			j.log.Error("journal: transcript redo failed; kept for the next start", zap.String("path", rel), zap.Error(err))
			rf = &redoFile{id: ls[0].FileID, end: ls[len(ls)-1].Off + int64(len(ls[len(ls)-1].Data))}
			for _, l := range ls {
				rf.lines = append(rf.lines, redoLine{off: l.Off, data: l.Data})
				j.redo.pending += int64(len(l.Data))
			}
			j.redo.since = j.now()
		}
		if rf != nil {
			j.redo.files[rel] = rf
		}
	}
	return true
}

// applyRedoFile applies one transcript's redo lines in order. nil: the file
// is gone or replaced.
func (j *Journal) applyRedoFile(rel string, ls []journalLine) (*redoFile, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		j.log.Warn("journal: redo line for a path outside the state directory ignored", zap.String("path", rel))
		return nil, nil
	}
	path := filepath.Join(j.root(), filepath.FromSlash(rel))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	id := inodeOf(fi)
	restored := 0
	for _, l := range ls {
		if l.FileID != id {
			continue // written for a file since replaced
		}
		ok, err := redoApplies(f, fi.Size(), l)
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		if fi.Size() < l.Off {
			j.log.Warn("journal: transcript shorter than a redo line's offset; left as it is",
				zap.String("path", rel), zap.Int64("size", fi.Size()), zap.Int64("offset", l.Off))
			return nil, nil
		}
		if err := f.Truncate(l.Off); err != nil {
			return nil, err
		}
		if _, err := f.WriteAt([]byte(l.Data), l.Off); err != nil {
			return nil, err
		}
		if fi, err = f.Stat(); err != nil {
			return nil, err
		}
		restored++
	}
	if restored > 0 {
		j.log.Warn("journal: transcript lines restored from redo lines", zap.String("path", rel), zap.Int("redo_lines", restored))
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	// Everything the file holds is durable now.
	return &redoFile{id: id, end: fi.Size()}, nil
}

// redoApplies reports whether the file (of size size) holds l's bytes.
func redoApplies(f io.ReaderAt, size int64, l journalLine) (bool, error) {
	if size < l.Off+int64(len(l.Data)) {
		return false, nil
	}
	b := make([]byte, len(l.Data))
	if _, err := f.ReadAt(b, l.Off); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(b, []byte(l.Data)), nil
}

// fsyncFile fsyncs the file at path.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
