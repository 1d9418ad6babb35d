package filestore

import (
	"cmp"
	"context"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"slices"
)

// Accept journals rec durably (fsynced, shared with concurrent callers).
// dup is true (and nothing is written) when the same id was accepted before
// (pending, or done within the retention). An error wrapping ErrStorage
// means the journal cannot take writes: refuse the message.
func (j *Journal) Accept(ctx context.Context, rec sessions.Record) (dup bool, err error) {
	dup, r, w, err := j.acceptWrite(ctx, rec)
	if err != nil {
		return false, err
	}
	if err := j.syncTo(w); err != nil {
		if !dup {
			j.mu.Lock()
			if j.recs[rec.ID] == r {
				delete(j.recs, rec.ID)
			}
			j.mu.Unlock()
		}
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	return dup, nil
}

// AcceptDeferred is Accept for an adapter that acknowledges a batch of
// messages at once (channels.Batch): the line is written (it survives the
// death of this process) when it returns, and wait returns once it is
// fsynced, wrapping ErrStorage when it cannot be. The waits of records
// accepted together share one fsync (syncTo): a getUpdates batch of N
// messages costs N writes and one fsync instead of N fsyncs in a row.
// A duplicate's wait is for the original's line. When wait fails the
// record stays pending (the caller runs it already); the sender's
// redelivery is then a duplicate.
func (j *Journal) AcceptDeferred(ctx context.Context, rec sessions.Record) (dup bool, wait func() error, err error) {
	dup, _, w, err := j.acceptWrite(ctx, rec)
	if err != nil {
		return false, func() error { return nil }, err
	}
	return dup, func() error {
		if err := j.syncTo(w); err != nil {
			return fmt.Errorf("sessions: journal accept %q: %w", rec.ID, err)
		}
		return nil
	}, nil
}

// acceptWrite writes rec's accept line unless its id is known: it returns
// whether it was (dup), the record made pending (nil for a duplicate) and
// the sequence number of the line to fsync before the accept (or the
// duplicate's original) is durable (0: nothing to wait for).
func (j *Journal) acceptWrite(ctx context.Context, rec sessions.Record) (dup bool, r *jrec, w uint64, err error) {
	if j.openErr != nil {
		return false, nil, 0, j.openErr
	}
	if err := sessions.CheckID("record", rec.ID); err != nil {
		return false, nil, 0, fmt.Errorf("sessions: journal accept: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, nil, 0, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.recs[rec.ID]; ok {
		// The first Accept may still be syncing: a duplicate is only safe to
		// acknowledge once the original is durable.
		return true, nil, r.wseq, nil
	}
	if j.done.has(rec.ID) {
		return true, nil, 0, nil
	}
	if rec.AcceptedAt.IsZero() {
		rec.AcceptedAt = j.now()
	}
	w, err = j.writeLocked(journalLine{Op: "accept", Rec: &rec}, true)
	if err != nil {
		return false, nil, 0, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.seq++
	r = &jrec{Record: rec, seq: j.seq, wseq: w, fresh: true}
	j.recs[rec.ID] = r
	return false, r, w, nil
}

// mark writes one non-accept line after applying it to memory. The state
// changes even when the line has to wait in the backlog: the caller goes on
// as if it was written, and the record is never run twice by this process.
func (j *Journal) mark(op string, l journalLine) error {
	if j.openErr != nil {
		return j.openErr
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("sessions: journal %s: closed", op)
	}
	l.Op = op
	if op == "done" || op == "sent" {
		l.At = j.now()
	}
	if _, err := j.writeLocked(l, false); err != nil {
		return fmt.Errorf("sessions: journal %s: %w", op, err)
	}
	j.applyLocked(l)
	return nil
}

// known keeps the ids the journal holds as pending.
func (j *Journal) known(ids []string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := j.recs[id]; ok && id != "" {
			out = append(out, id)
		}
	}
	return out
}

// Start records that a turn begins for ids.
func (j *Journal) Start(ids ...string) error {
	if ids = j.known(ids); len(ids) == 0 {
		return nil
	}
	return j.mark("start", journalLine{IDs: ids})
}

// Fail records that a turn for ids failed and leaves them pending.
func (j *Journal) Fail(ids ...string) error {
	if ids = j.known(ids); len(ids) == 0 {
		return nil
	}
	return j.mark("fail", journalLine{IDs: ids})
}

// Abort records that a turn for ids stopped for a shutdown: not a death.
func (j *Journal) Abort(ids ...string) error {
	if ids = j.known(ids); len(ids) == 0 {
		return nil
	}
	return j.mark("abort", journalLine{IDs: ids})
}

// Done finishes ids without a reply (dropped, cancelled, given up).
func (j *Journal) Done(ids ...string) error {
	if ids = j.known(ids); len(ids) == 0 {
		return nil
	}
	if err := j.mark("done", journalLine{IDs: ids}); err != nil {
		return err
	}
	j.maybeCompact()
	return nil
}

// Ready stores a reply before its first chunk is sent. Its records are
// answered by it from now on: they are no longer Pending, and they are done
// when the last chunk is marked Sent.
func (j *Journal) Ready(r sessions.Reply) error {
	if err := sessions.CheckID("reply", r.ID); err != nil {
		return fmt.Errorf("sessions: journal ready: %w", err)
	}
	for _, id := range r.Records {
		if err := sessions.CheckID("record", id); err != nil {
			return fmt.Errorf("sessions: journal ready: %w", err)
		}
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = j.now()
	}
	return j.mark("ready", journalLine{Reply: &r})
}

// Sent records that the platform accepted the first n chunks of reply id.
func (j *Journal) Sent(id string, n int) error {
	j.mu.Lock()
	rp, ok := j.replies[id]
	complete := ok && n >= len(rp.Chunks)
	j.mu.Unlock()
	if !ok {
		return nil
	}
	if err := j.mark("sent", journalLine{ID: id, N: n}); err != nil {
		return err
	}
	if complete {
		j.maybeCompact()
	}
	return nil
}

// Pending returns the records an earlier process left without an outcome
// (accepted, not done, not answered by an outstanding reply), oldest first:
// what a start resumes. Records accepted since the journal was opened are
// in the caller's hands already and are not returned, so a channel that
// starts before Resume cannot get a message queued twice.
func (j *Journal) Pending() ([]sessions.Record, error) {
	if j.openErr != nil {
		return nil, j.openErr
	}
	j.mu.Lock()
	rs := make([]*jrec, 0, len(j.recs))
	for _, r := range j.recs {
		if r.reply == "" && !r.fresh {
			rs = append(rs, r)
		}
	}
	j.mu.Unlock()
	slices.SortFunc(rs, func(a, b *jrec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]sessions.Record, len(rs))
	for i, r := range rs {
		out[i] = r.Record
	}
	return out, nil
}

// Replies returns the replies not completely delivered, oldest first.
func (j *Journal) Replies() ([]sessions.Reply, error) {
	if j.openErr != nil {
		return nil, j.openErr
	}
	j.mu.Lock()
	rs := make([]*jreply, 0, len(j.replies))
	for _, r := range j.replies {
		rs = append(rs, r)
	}
	j.mu.Unlock()
	slices.SortFunc(rs, func(a, b *jreply) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]sessions.Reply, len(rs))
	for i, r := range rs {
		out[i] = r.Reply
		out[i].Records = slices.Clone(r.Records)
		out[i].Chunks = slices.Clone(r.Chunks)
	}
	return out, nil
}
