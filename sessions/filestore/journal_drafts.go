package filestore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"slices"
)

type jdraft struct {
	sessions.Draft
	seq   uint64
	fresh bool // recorded by this process
}

// Draft records a draft message just posted.
func (j *Journal) Draft(d sessions.Draft) error {
	if err := sessions.CheckID("draft", d.ID); err != nil {
		return fmt.Errorf("sessions: journal draft: %w", err)
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = j.now()
	}
	if err := j.mark("draft", journalLine{Draft: &d}); err != nil {
		return err
	}
	j.mu.Lock()
	if jd, ok := j.drafts[d.ID]; ok {
		jd.fresh = true
	}
	j.mu.Unlock()
	return nil
}

// DraftDone retires draft id (deleted, or finished otherwise).
func (j *Journal) DraftDone(id string) error {
	j.mu.Lock()
	_, ok := j.drafts[id]
	j.mu.Unlock()
	if !ok {
		return nil
	}
	return j.mark("undraft", journalLine{ID: id})
}

// Drafts returns the drafts an earlier process left, oldest first (drafts
// recorded since the journal was opened belong to running turns).
func (j *Journal) Drafts() ([]sessions.Draft, error) {
	if j.openErr != nil {
		return nil, j.openErr
	}
	j.mu.Lock()
	ds := make([]*jdraft, 0, len(j.drafts))
	for _, d := range j.drafts {
		if !d.fresh {
			ds = append(ds, d)
		}
	}
	j.mu.Unlock()
	slices.SortFunc(ds, func(a, b *jdraft) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]sessions.Draft, len(ds))
	for i, d := range ds {
		out[i] = d.Draft
	}
	return out, nil
}

// applyDraftLocked applies a draft, undraft or ready line.
func (j *Journal) applyDraftLocked(l journalLine) {
	if j.drafts == nil {
		j.drafts = map[string]*jdraft{}
	}
	switch l.Op {
	case "draft":
		if l.Draft != nil && l.Draft.ID != "" {
			j.seq++
			j.drafts[l.Draft.ID] = &jdraft{Draft: *l.Draft, seq: j.seq}
		}
	case "undraft":
		delete(j.drafts, l.ID)
	case "ready":
		if l.Reply != nil && l.Reply.Draft != "" {
			delete(j.drafts, l.Reply.Draft)
		}
	}
}

// encodeDraftsLocked writes the live drafts into a compacted log.
func (j *Journal) encodeDraftsLocked(enc *json.Encoder) error {
	ds := make([]*jdraft, 0, len(j.drafts))
	for _, d := range j.drafts {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *jdraft) int { return cmp.Compare(a.seq, b.seq) })
	for _, d := range ds {
		dr := d.Draft
		if err := enc.Encode(journalLine{Op: "draft", Draft: &dr}); err != nil {
			return err
		}
	}
	return nil
}

// DraftLive reports whether draft id is recorded and not yet retired.
func (j *Journal) DraftLive(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.drafts[id]
	return ok
}
