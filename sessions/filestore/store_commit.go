package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
)

// commitOp is one durable change waiting for a batch.
type commitOp struct {
	fn      func(*opTx) error
	err     error
	done    chan struct{} // closed when the batch holding fn is on disk (or failed)
	promote chan struct{} // closed when this op's goroutine must lead the next batch
}

// commit applies fn as a read-modify-write under the store lock and returns
// once the result is durable. Concurrent callers are grouped: one of them
// (the leader) takes the lock, applies every queued fn, writes the files
// once and wakes the others. fn may be nil (flush the dirty set only).
func (s *Store) commit(ctx context.Context, fn func(*opTx) error) error {
	op := &commitOp{fn: fn, done: make(chan struct{}), promote: make(chan struct{})}
	if s.lock.heldIn(ctx) {
		// The caller holds the store lock: a leader would wait for it forever.
		s.runBatch(ctx, []*commitOp{op})
		return op.err
	}
	s.cmu.Lock()
	s.queue = append(s.queue, op)
	lead := !s.committing
	if lead {
		s.committing = true
	}
	s.cmu.Unlock()
	if !lead {
		select {
		case <-op.done:
			return op.err
		case <-op.promote:
		}
	}
	// Lead one batch, then hand leadership to the oldest waiter, so no caller
	// works for others indefinitely.
	s.cmu.Lock()
	batch := s.queue
	s.queue = nil
	s.cmu.Unlock()
	s.runBatch(context.WithoutCancel(ctx), batch)
	s.cmu.Lock()
	if len(s.queue) > 0 {
		close(s.queue[0].promote)
	} else {
		s.committing = false
	}
	s.cmu.Unlock()
	<-op.done
	return op.err
}

// runBatch applies ops under the store lock and writes the result.
func (s *Store) runBatch(ctx context.Context, ops []*commitOp) {
	finish := func(err error) {
		for _, op := range ops {
			if op.err == nil {
				op.err = err
			}
			close(op.done)
		}
	}
	lctx, unlock, err := s.lock.Acquire(ctx)
	if err != nil {
		finish(fmt.Errorf("sessions: store lock: %w", err))
		return
	}
	defer unlock()
	start := time.Now()
	tx := &txn{s: s, ctx: lctx, now: s.m.now()}

	s.mu.Lock()
	// Under the lock the file is always re-checked: another process may
	// have written it since we last looked.
	if err := s.revalidateLocked(start); err != nil {
		s.mu.Unlock()
		finish(err)
		return
	}
	for _, op := range ops {
		if op.fn == nil {
			continue
		}
		o := tx.newOp()
		if op.err = op.fn(o); op.err == nil {
			op.err = o.applyLocked()
		}
	}
	if !s.dirty && !tx.archiveDirty && len(tx.pre) == 0 && len(tx.post) == 0 {
		s.mu.Unlock()
		finish(nil)
		return
	}
	// A routine batch appends the changed entries to the change log; the
	// whole snapshot is written only when the log is due for a fold.
	var data, lines []byte
	if s.dirty {
		// A batch that moves a session never folds: its move must be one
		// log line after every older one (store_rename.go).
		if lines, err = s.encodeChangesLocked(); err == nil && len(s.renamed) == 0 && s.foldDueLocked(len(lines)) {
			lines = nil
			data, err = s.encodeLocked()
		}
		if err != nil {
			s.mu.Unlock()
			finish(err)
			return
		}
	}
	flushed := s.pending
	s.pending = map[string]*delta{}
	changed, renamed := s.changed, s.renamed
	s.changed, s.renamed = map[string]struct{}{}, map[string]string{}
	s.dirty = false
	good := s.deltaGood
	s.writing = true
	s.mu.Unlock()

	err = tx.write(data, lines, good)

	s.mu.Lock()
	s.writing = false
	if err != nil {
		// The files are as they were: put the coalesced updates back and
		// make the next access reload, dropping the failed ops' changes.
		for k, d := range flushed {
			if newer, ok := s.pending[k]; ok {
				d.merge(newer)
			}
			s.pending[k] = d
		}
		for k := range changed {
			s.changed[k] = struct{}{}
		}
		for to, from := range renamed {
			s.renamed[to] = from
		}
		s.loaded = false
	} else if data != nil || lines != nil {
		if data != nil {
			if fi, serr := os.Stat(s.indexPath); serr == nil {
				s.stamp = stampOf(fi)
			} else {
				s.loaded = false
			}
			s.deltaGood = 0
		} else {
			s.deltaGood = good + int64(len(lines))
		}
		switch fi, serr := os.Stat(s.deltaPath); {
		case serr == nil:
			s.dstamp = stampOf(fi)
		case errors.Is(serr, os.ErrNotExist):
			s.dstamp = fileStamp{}
		default:
			s.loaded = false
		}
		s.checked = time.Now()
	}
	s.mu.Unlock()
	if err == nil {
		s.log.Debug("sessions index written", zap.Int("ops", len(ops)), zap.Int("bytes", len(data)),
			zap.Duration("took", time.Since(start)))
	}
	finish(err)
}

// write performs the batch's file changes in crash-safe order: restores
// (pre), the archive list, the index, then archiving renames and lock file
// removals (post). A crash between steps leaves at worst an orphan file that
// maintenance or doctor finds; the index is never torn.
func (tx *txn) write(index, lines []byte, good int64) error {
	for _, f := range tx.pre {
		if err := f(); err != nil {
			return fmt.Errorf("sessions: %w", err)
		}
	}
	if tx.archiveDirty {
		if err := tx.writeArchive(); err != nil {
			return err
		}
	}
	if index != nil {
		if err := writeFileAtomic(tx.s.indexPath, index); err != nil {
			return fmt.Errorf("sessions: %w", err)
		}
		// The snapshot holds every change: the log starts over.
		if err := truncateDelta(tx.s.deltaPath); err != nil {
			return err
		}
	}
	if lines != nil {
		if err := appendDelta(tx.s.deltaPath, good, lines); err != nil {
			return err
		}
	}
	for _, f := range tx.post {
		if err := f(); err != nil {
			tx.s.log.Warn("archiving a transcript failed; doctor will find the orphan", zap.Error(err))
		}
	}
	return nil
}
