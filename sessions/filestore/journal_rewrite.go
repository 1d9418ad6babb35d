package filestore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// The journal's rewrite (compaction): the log replaced by the lines of its
// state — the done ids remembered for duplicates, pending records with
// their counts, outstanding replies, drafts on screen.
//
// What a rewrite writes grows with the done ids, a day of traffic
// (sessions.DoneRetention): tens of megabytes on a busy bot. So a rewrite
// waits until the log grew by as much (compactDueLocked), and the one a
// mark finds due runs on the journal's loop, beside the journal's writes
// (rewriteOnline): no caller waits for it. The state
// is copied under j.mu, encoded, written and fsynced to journal.jsonl.rewrite
// with no lock held, while Accept, the marks and the group fsync go on in
// the old log; the lines written meanwhile (kept in j.tail) are then
// appended to the new file, fsynced, and it is renamed over the log, with
// both locks held for that short tail only. A crash at any instant leaves
// the old log whole, or the new one holding everything the old one did.

// rewriteExt names the file a rewrite writes before it replaces the log.
const rewriteExt = ".rewrite"

// journalState is what a rewrite writes: done ids with their times, and
// the other live lines already encoded.
type journalState struct {
	done doneView
	live []byte
}

// stateLocked copies the journal's state: the done ids' chunks, not the
// ids (a day of them is half a million, and every write waits for the
// copy). The caller holds j.mu.
func (j *Journal) stateLocked() (journalState, error) {
	st := journalState{done: j.done.view()}
	var err error
	st.live, err = j.liveLocked()
	return st, err
}

// liveLocked encodes the lines of the pending records, outstanding
// replies and drafts on screen. The caller holds j.mu.
func (j *Journal) liveLocked() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	rs := make([]*jrec, 0, len(j.recs))
	for _, r := range j.recs {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b *jrec) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range rs {
		rec := r.Record
		if err := enc.Encode(journalLine{Op: "accept", Rec: &rec}); err != nil {
			return nil, err
		}
	}
	rps := make([]*jreply, 0, len(j.replies))
	for _, r := range j.replies {
		rps = append(rps, r)
	}
	slices.SortFunc(rps, func(a, b *jreply) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range rps {
		rp := r.Reply
		if err := enc.Encode(journalLine{Op: "ready", Reply: &rp}); err != nil {
			return nil, err
		}
	}
	if err := j.encodeDraftsLocked(enc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// doneLineBytes is about what a done line adds to its id's length (the
// time's length varies with its fraction of a second).
const doneLineBytes = int64(len(`{"op":"done","ids":[""],"at":""}`+"\n") + len("2006-01-02T15:04:05.999999Z"))

// encode returns the state as the lines of a log: one line per done id
// (short lines, simple replay), then the live lines.
func (st journalState) encode() ([]byte, error) {
	b := make([]byte, 0, st.done.len()*80+len(st.live))
	l := journalLine{Op: "done", IDs: []string{""}}
	var err error
	st.done.each(func(id string, at time.Time) {
		if err != nil {
			return
		}
		l.IDs[0], l.At = id, at
		if b, err = appendJournalLine(b, &l); err == nil {
			b = append(b, '\n')
		}
	})
	if err != nil {
		return nil, err
	}
	return append(b, st.live...), nil
}

// encodeLocked is the journal's state as the lines of a log.
func (j *Journal) encodeLocked() ([]byte, error) {
	st, err := j.stateLocked()
	if err != nil {
		return nil, err
	}
	return st.encode()
}

// compactDueLocked reports whether the log is to be rewritten now. A
// rewrite writes all that is live, and that includes the done ids
// remembered for duplicates, so the log must first have grown by as much
// as the last rewrite wrote: rewriting never costs more than appending
// did. It is due once the log grew that much and by compactMin while
// nothing is live, or by compactMax even with records pending. (Until
// issue 21 the forced rewrite counted the log's size, not its growth: once
// a day of done ids alone passed journalCompactMax, every mark rewrote the
// whole journal.) The caller holds j.mu.
func (j *Journal) compactDueLocked() bool {
	if j.closed || j.fault != nil || len(j.backlog) > 0 || j.rewriting {
		return false // a mark held in memory is in the state already: its line must not follow it
	}
	grown := j.size - j.compacted
	drained := len(j.recs) == 0 && len(j.replies) == 0
	return drained && grown > max(j.compactMin, j.compacted) || grown >= max(j.compactMax, j.compacted)
}

// maybeCompact has the loop rewrite the log when it has grown.
func (j *Journal) maybeCompact() {
	j.mu.Lock()
	due := j.compactDueLocked()
	j.mu.Unlock()
	if due {
		select {
		case j.compactWake <- struct{}{}:
		default: // asked already
		}
	}
}

// rewriteOnline rewrites the log beside the journal's writes (see the top
// of this file). A failure leaves the old log in use and is logged; the
// next mark that finds the rewrite due tries again.
func (j *Journal) rewriteOnline() {
	j.mu.Lock()
	if !j.compactDueLocked() {
		j.mu.Unlock()
		return
	}
	st, err := j.stateLocked()
	gen := j.rewrites
	if err == nil {
		j.rewriting, j.tail = true, nil
	}
	j.mu.Unlock()
	if err != nil {
		j.log.Warn("journal compaction failed", zap.Error(err))
		return
	}
	tmp := j.path + rewriteExt
	f, head, err := j.writeRewrite(tmp, st)
	if err == nil {
		if j.rewriteHook != nil {
			j.rewriteHook()
		}
		err = j.installRewrite(tmp, f, head, gen)
	}
	if err != nil {
		_ = os.Remove(tmp)
		j.log.Warn("journal compaction failed", zap.Error(err))
	}
}

// writeRewrite writes st to a new file at tmp and fsyncs it; the file
// stays open for the tail.
func (j *Journal) writeRewrite(tmp string, st journalState) (*os.File, int64, error) {
	b, err := st.encode()
	if err != nil {
		j.endRewrite()
		return nil, 0, err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		j.endRewrite()
		return nil, 0, fmt.Errorf("rewrite %s: %w", filepath.Base(tmp), err)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err != nil {
		_ = f.Close()
		j.endRewrite()
		return nil, 0, fmt.Errorf("rewrite %s: %w", filepath.Base(tmp), err)
	}
	return f, int64(len(b)), nil
}

// endRewrite forgets a rewrite that will not replace the log.
func (j *Journal) endRewrite() {
	j.mu.Lock()
	j.rewriting, j.tail = false, nil
	j.mu.Unlock()
}

// installRewrite appends the lines written since the state was copied to
// f (the rewrite at tmp, head bytes so far), fsyncs it and renames it over
// the log, holding syncMu and mu: nothing is written meanwhile. The old log
// is kept when the journal was closed, or may hold what the tail does not:
// a write or an fsync failed since (marks in memory only), or the log was
// rewritten from memory since the copy (rewrites moved on from gen).
func (j *Journal) installRewrite(tmp string, f *os.File, head int64, gen int) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	tail := j.tail
	j.rewriting, j.tail = false, nil
	if j.closed || j.fault != nil || j.lost != 0 || len(j.backlog) > 0 || j.rewrites != gen {
		_ = f.Close()
		return errors.New("the log failed or closed during the rewrite; kept")
	}
	_, err := f.Write(tail)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", filepath.Base(j.path), err)
	}
	if err := renameDurable(tmp, j.path); err != nil {
		if _, serr := os.Stat(tmp); serr == nil {
			return fmt.Errorf("rewrite %s: %w", filepath.Base(j.path), err) // not renamed
		}
		// Renamed, the directory's fsync failed: the rename may not survive
		// a power loss, and the lines written from now on with it. Treated
		// as a failed fsync of all of them, which recover rewrites from
		// memory (durably) before Accept takes anything again.
		if rerr := j.reopenLocked(head, int64(len(tail))); rerr != nil {
			return rerr
		}
		j.fault = fmt.Errorf("%w: rewrite %s: %w", sessions.ErrStorage, j.path, err)
		j.lost, j.lostErr = j.written, j.fault
		return j.fault
	}
	return j.reopenLocked(head, int64(len(tail)))
}

// compactLocked rewrites the log from memory holding the locks (start,
// recovery after a failed fsync, a log deleted under the journal).
func (j *Journal) compactLocked() error {
	b, err := j.encodeLocked()
	if err != nil {
		return err
	}
	return j.rewriteLocked(b)
}

// compactAtStartLocked is compactLocked for a log just replayed, skipped
// when the log is no more than about twice what the rewrite would write: a
// day of done ids would be written again at every start. The done lines
// are estimated from their ids, not encoded (a start replays half a
// million of them on a busy bot).
func (j *Journal) compactAtStartLocked() error {
	live, err := j.liveLocked()
	if err != nil {
		return err
	}
	est := int64(len(live))
	j.done.view().each(func(id string, _ time.Time) { est += doneLineBytes + int64(len(id)) })
	if j.size <= 2*est {
		return nil // replay counted the log as rewritten: it waits to double
	}
	return j.compactLocked()
}

// rewriteLocked replaces the log by b, the journal's state.
func (j *Journal) rewriteLocked(b []byte) error {
	if err := writeFileAtomic(j.path, b); err != nil {
		return err
	}
	return j.reopenLocked(int64(len(b)), 0)
}

// reopenLocked appends to the log just renamed into place: head bytes of
// state and tail bytes of lines since, all fsynced.
func (j *Journal) reopenLocked(head, tail int64) error {
	f, err := j.openFile(j.path)
	if err != nil {
		j.closed = true // nothing can be appended safely any more
		return err
	}
	_ = j.f.Close()
	j.f = f
	j.backlog = nil // the rewrite holds every mark
	j.rewrites++
	j.rewrote += head + tail
	j.grew += j.size - j.compacted
	j.size, j.compacted = head+tail, head+tail
	j.synced = j.written
	j.lost, j.lostErr = 0, nil // the rewrite holds every line
	j.log.Debug("journal compacted", zap.Int("pending", len(j.recs)), zap.Int("replies", len(j.replies)), zap.Int("done_ids", j.done.len()))
	return nil
}
