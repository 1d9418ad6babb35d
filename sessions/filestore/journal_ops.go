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
	if j.openErr != nil {
		return false, j.openErr
	}
	if err := sessions.CheckID("record", rec.ID); err != nil {
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.mu.Lock()
	if r, ok := j.recs[rec.ID]; ok {
		w := r.wseq
		j.mu.Unlock()
		// The first Accept may still be syncing: a duplicate is only safe to
		// acknowledge once the original is durable.
		if err := j.syncTo(w); err != nil {
			return false, fmt.Errorf("sessions: journal accept: %w", err)
		}
		return true, nil
	}
	if _, ok := j.done[rec.ID]; ok {
		j.mu.Unlock()
		return true, nil
	}
	if rec.AcceptedAt.IsZero() {
		rec.AcceptedAt = j.now()
	}
	w, err := j.writeLocked(journalLine{Op: "accept", Rec: &rec}, true)
	if err != nil {
		j.mu.Unlock()
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	j.seq++
	r := &jrec{Record: rec, seq: j.seq, wseq: w, fresh: true}
	j.recs[rec.ID] = r
	j.mu.Unlock()
	if err := j.syncTo(w); err != nil {
		j.mu.Lock()
		if j.recs[rec.ID] == r {
			delete(j.recs, rec.ID)
		}
		j.mu.Unlock()
		return false, fmt.Errorf("sessions: journal accept: %w", err)
	}
	return false, nil
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
