package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

// Timings of the journal's background loop.
const (
	journalSyncEvery  = 50 * time.Millisecond // lazy fsync of marks
	journalRetryEvery = time.Second           // retry of failed writes, file checks
)

// writeLocked appends one encoded line. must is true for lines the caller
// cannot continue without (accept): they fail instead of waiting in the
// backlog. It returns the line's sequence number (0 when it waits).
func (j *Journal) writeLocked(l journalLine, must bool) (uint64, error) {
	if j.closed {
		return 0, errors.New("journal closed")
	}
	b, err := appendJournalLine(j.lineBuf[:0], &l)
	if err != nil {
		return 0, err
	}
	b = append(b, '\n')
	if cap(b) <= maxKeptLineBuf {
		j.lineBuf = b
	}
	_, broken := j.f.(brokenFile)
	if len(j.backlog) > 0 || broken {
		j.flushBacklogLocked()
	}
	if _, broken = j.f.(brokenFile); len(j.backlog) > 0 || broken {
		if must {
			return 0, fmt.Errorf("%w: %w", sessions.ErrStorage, j.fault)
		}
		j.backlog = append(j.backlog, slices.Clone(b))
		return 0, nil
	}
	if err := j.appendLocked(b); err != nil {
		if must {
			return 0, err
		}
		j.backlog = append(j.backlog, slices.Clone(b))
		return 0, nil
	}
	return j.written, nil
}

// maxKeptLineBuf bounds the line buffer a Journal keeps between writes.
const maxKeptLineBuf = 16 << 10

// appendLocked writes b whole or cuts the file back to the last whole line.
func (j *Journal) appendLocked(b []byte) error {
	n, err := j.f.Write(b)
	if err == nil && n < len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err != nil {
		j.failures.Add(1)
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				// The fragment stays; the next successful write would glue
				// onto it. Reopen on recovery cuts it (replay-style).
				err = errors.Join(err, fmt.Errorf("cut back: %w", terr))
				j.f = brokenFile{j.f}
			}
		}
		if j.fault == nil {
			j.log.Error("journal write failed; marks kept in memory and retried", zap.Error(err))
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			j.fault = fmt.Errorf("%w: %w", sessions.ErrStorage, err) // names the file already
		} else {
			j.fault = fmt.Errorf("%w: write %s: %w", sessions.ErrStorage, j.path, err)
		}
		return j.fault
	}
	j.size += int64(n)
	j.written++
	j.lines.Add(1)
	if j.rewriting {
		j.tail = append(j.tail, b...) // the rewrite in flight copies it
	}
	return nil
}

// flushBacklogLocked writes waiting marks in order until one fails.
func (j *Journal) flushBacklogLocked() {
	if bf, ok := j.f.(brokenFile); ok {
		if err := bf.Truncate(j.size); err != nil {
			return
		}
		j.f = bf.journalFile
	}
	for len(j.backlog) > 0 {
		if err := j.appendLocked(j.backlog[0]); err != nil {
			return
		}
		j.backlog[0] = nil
		j.backlog = j.backlog[1:]
	}
}

// brokenFile marks a file whose failed write could not be cut back.
type brokenFile struct{ journalFile }

// syncTo returns once line seq is durable. Callers arriving while an fsync
// runs wait for it and then share the next one.
func (j *Journal) syncTo(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if seq <= j.lost {
		return j.lostErr
	}
	if j.synced >= seq {
		return nil
	}
	j.mu.Lock()
	target, f := j.written, j.f
	j.mu.Unlock()
	if f == nil {
		return errors.New("journal closed")
	}
	j.fsyncs.Add(1)
	if err := f.Sync(); err != nil {
		j.mu.Lock()
		j.fault = fmt.Errorf("%w: fsync %s: %w", sessions.ErrStorage, j.path, err)
		j.lost, j.lostErr = target, j.fault
		j.mu.Unlock()
		return j.fault
	}
	j.synced = target
	return nil
}

// loop fsyncs marks shortly after they are written, retries failed writes
// and notices a journal file deleted or replaced under it.
func (j *Journal) loop() {
	defer close(j.loopDone)
	sync := time.NewTicker(journalSyncEvery)
	defer sync.Stop()
	retry := time.NewTicker(journalRetryEvery)
	defer retry.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-sync.C:
			j.mu.Lock()
			w := j.written
			j.mu.Unlock()
			if w > j.syncedSeq() {
				_ = j.syncTo(w)
			}
		case <-retry.C:
			j.recover()
		case <-j.compactWake:
			j.rewriteOnline()
		}
	}
}

func (j *Journal) syncedSeq() uint64 {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	return j.synced
}

// recover retries waiting marks, probes a failed log, and rewrites the log
// from memory if its file was deleted or replaced.
func (j *Journal) recover() {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if j.replacedLocked() {
		j.log.Error("journal file was deleted or replaced while running; rewriting it from memory", zap.String("path", j.path))
		if err := j.compactLocked(); err != nil {
			j.fault = fmt.Errorf("%w: rewrite %s: %w", sessions.ErrStorage, j.path, err)
			return
		}
	}
	if j.fault == nil {
		return
	}
	j.flushBacklogLocked()
	if len(j.backlog) > 0 {
		return
	}
	if _, ok := j.f.(brokenFile); ok {
		return
	}
	if j.lost > 0 {
		// An fsync failed: lines it covered may be written nowhere but
		// in memory. Rewrite the log from memory (fsynced, renamed), which
		// also proves it takes writes again.
		if err := j.compactLocked(); err != nil {
			if !j.closed {
				j.fault = fmt.Errorf("%w: rewrite %s after a failed fsync: %w", sessions.ErrStorage, j.path, err)
			}
			return
		}
		j.fault = nil
		j.log.Info("journal rewritten after a failed fsync; writable again")
		return
	}
	// Nothing waits: prove the log takes writes again before saying so.
	if err := j.appendLocked([]byte(`{"op":"probe"}` + "\n")); err != nil {
		return
	}
	if err := j.f.Sync(); err != nil {
		j.fault = fmt.Errorf("%w: fsync %s: %w", sessions.ErrStorage, j.path, err)
		j.lost, j.lostErr = j.written, j.fault
		return
	}
	j.synced = j.written
	j.fault = nil
	j.log.Info("journal writable again")
}

// replacedLocked reports whether the path no longer names the open file.
func (j *Journal) replacedLocked() bool {
	if j.f == nil {
		return false
	}
	open, err := j.f.Stat()
	if err != nil {
		return false
	}
	cur, err := os.Stat(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	return err == nil && !os.SameFile(open, cur)
}

// Health is nil while every mark is written; otherwise the write failure
// (wrapping ErrStorage) that leaves marks waiting.
func (j *Journal) Health() error {
	if j.openErr != nil {
		return j.openErr
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fault
}

// Stats returns counters of the journal's work.
func (j *Journal) Stats() sessions.JournalStats {
	j.mu.Lock()
	p, r := len(j.recs), len(j.replies)
	j.mu.Unlock()
	return sessions.JournalStats{Lines: j.lines.Load(), Fsyncs: j.fsyncs.Load(), WriteFailures: j.failures.Load(), Pending: p, Replies: r}
}

func (j *Journal) close() error {
	if j.openErr != nil {
		return nil
	}
	j.mu.Lock()
	if j.closed && j.f == nil {
		j.mu.Unlock()
		return nil
	}
	j.mu.Unlock()
	close(j.stop)
	<-j.loopDone
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	if len(j.backlog) > 0 {
		j.flushBacklogLocked()
		if len(j.backlog) > 0 {
			err = fmt.Errorf("sessions: journal close: %d marks could not be written: %w", len(j.backlog), j.fault)
		}
	}
	j.closed = true
	if j.f != nil {
		err = errors.Join(err, j.f.Sync(), j.f.Close())
		j.f = nil
	}
	_ = os.Truncate(j.path+lockExt, 0)
	return errors.Join(err, j.fl.Unlock())
}
