package filestore

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// mergeIfDue merges every segment into one when there are more than
// maxSegments (the writer only).
func (x *searchIndex) mergeIfDue(ctx context.Context) error {
	x.segMu.RLock()
	n := len(x.segs)
	x.segMu.RUnlock()
	if n <= maxSegments {
		return nil
	}
	return x.merge(ctx)
}

// currentAll maps the rowKey of every current session to true.
func (x *searchIndex) currentAll() (map[string]bool, error) {
	agents, err := x.m.Agents()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range agents {
		st, err := x.m.Store(a)
		if err != nil {
			return nil, err
		}
		cur, err := st.currentSessions()
		if err != nil {
			return nil, err
		}
		for sid := range cur {
			out[rowKey(a, sid)] = true
		}
	}
	return out, nil
}

// merge rewrites every segment as one, without the messages of sessions
// that are no longer current or were dropped.
func (x *searchIndex) merge(ctx context.Context) error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.segMu.RLock()
	olds := append([]*segment(nil), x.segs...)
	x.segMu.RUnlock()
	if len(olds) < 2 {
		return nil
	}
	current, err := x.currentAll()
	if err != nil {
		return fmt.Errorf("search: merge: %w", err)
	}
	x.mu.Lock()
	dropped := cloneDropped(x.dropped)
	gen := x.nextGen
	x.nextGen++
	x.mu.Unlock()

	w := &segmentWriter{}
	rowOf := map[string]uint32{}
	remaps := make([][]int32, len(olds))
	for i, s := range olds {
		if err := ctx.Err(); err != nil {
			return err
		}
		rowMap := make([]int32, len(s.rows))
		for j, r := range s.rows {
			k := rowKey(r.agent, r.sid)
			if g, ok := dropped[k]; !current[k] || (ok && s.gen <= g) {
				rowMap[j] = -1
				continue
			}
			nr, ok := rowOf[k]
			if !ok {
				nr = uint32(len(w.rows))
				rowOf[k] = nr
				w.rows = append(w.rows, sessRow{agent: r.agent, sid: r.sid})
			}
			w.rows[nr].covered = max(w.rows[nr].covered, r.covered)
			rowMap[j] = int32(nr)
		}
		remap := make([]int32, s.nDocs)
		for d := range s.nDocs {
			rec := s.doc(uint32(d))
			if rowMap[rec.row] < 0 {
				remap[d] = -1
				continue
			}
			remap[d] = int32(len(w.docs))
			rec.row = uint32(rowMap[rec.row])
			w.docs = append(w.docs, rec)
		}
		remaps[i] = remap
	}
	newID := w.sortDocs()
	for _, remap := range remaps {
		for d, n := range remap {
			if n >= 0 {
				remap[d] = int32(newID[n])
			}
		}
	}
	if err := mergeTerms(w, olds, remaps); err != nil {
		return err
	}
	data, err := w.bytes()
	if err != nil {
		return err
	}
	path := filepath.Join(x.dir, segName(gen))
	if err := writeSegmentFile(path, data); err != nil {
		return err
	}
	// dropped sessions are gone from the merged segment; a dropped mark
	// newer than the merge's input (none: flushMu) would stay.
	if err := x.writeManifest([]uint64{gen}, gen+1, nil); err != nil {
		_ = os.Remove(path)
		return err
	}
	merged, err := openSegment(path, gen)
	if err != nil {
		return err
	}
	x.segMu.Lock()
	x.segs = append([]*segment{merged}, x.segs[len(olds):]...)
	x.segMu.Unlock()
	x.mu.Lock()
	for k, g := range x.dropped {
		if g < gen {
			delete(x.dropped, k)
		}
	}
	var gone []string
	for k := range x.covered {
		if _, kept := rowOf[k]; !kept && !current[k] {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		if r, ok := x.tail.rowOf[k]; ok {
			x.covered[k] = x.tail.rows[r].covered
		} else {
			delete(x.covered, k)
		}
	}
	x.mu.Unlock()
	x.reindexSwitched(gone)
	var errs int
	for _, s := range olds {
		if err := s.close(); err != nil {
			errs++
		}
		if err := os.Remove(s.path); err != nil {
			errs++
		}
	}
	x.log.Info("search index: merged", zap.Int("segments", len(olds)), zap.Int("docs", len(w.docs)),
		zap.Int("sessions", len(w.rows)), zap.Int("file_errors", errs))
	return nil
}

// reindexSwitched catches up the sessions among gone (dropped by a merge
// as not current) that are current again (a Switch while it ran).
func (x *searchIndex) reindexSwitched(gone []string) {
	if len(gone) == 0 {
		return
	}
	now, err := x.currentAll()
	if err != nil {
		return
	}
	for _, k := range gone {
		agent, sid, _ := strings.Cut(k, "/")
		if !now[k] {
			continue
		}
		if st, err := x.m.Store(agent); err == nil {
			x.ensureSession(agent, st.dir, sid)
		}
	}
}

// mergeTerms writes the union of the segments' terms with their postings
// renumbered (remaps[i][doc] is the new number, -1 for a dropped doc).
func mergeTerms(w *segmentWriter, segs []*segment, remaps [][]int32) error {
	h := &termHeap{}
	for i, s := range segs {
		if s.nTerms > 0 {
			h.items = append(h.items, termCursor{seg: i, term: s.term(0)})
		}
	}
	heap.Init(h)
	var (
		docs []uint32
		raw  []uint32
		cur  []byte
	)
	emit := func() error {
		if len(docs) == 0 {
			return nil
		}
		slices.Sort(docs) // renumbered by timestamp
		err := w.addTerm(cur, docs)
		docs = docs[:0]
		return err
	}
	for h.Len() > 0 {
		c := h.items[0]
		if cur == nil || !bytes.Equal(c.term, cur) {
			if err := emit(); err != nil {
				return err
			}
			cur = append(cur[:0], c.term...)
		}
		raw = decodePostings(segs[c.seg].postingsAt(c.idx), raw[:0])
		for _, d := range raw {
			if int(d) < len(remaps[c.seg]) && remaps[c.seg][d] >= 0 {
				docs = append(docs, uint32(remaps[c.seg][d]))
			}
		}
		c.idx++
		if c.idx < segs[c.seg].nTerms {
			h.items[0].idx, h.items[0].term = c.idx, segs[c.seg].term(c.idx)
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return emit()
}

// termCursor walks one segment's terms; the heap orders cursors by term,
// then by segment (older segments' docs have lower new numbers).
type termCursor struct {
	seg, idx int
	term     []byte
}

type termHeap struct{ items []termCursor }

func (h *termHeap) Len() int { return len(h.items) }
func (h *termHeap) Less(i, j int) bool {
	if c := bytes.Compare(h.items[i].term, h.items[j].term); c != 0 {
		return c < 0
	}
	return h.items[i].seg < h.items[j].seg
}
func (h *termHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *termHeap) Push(v any)    { h.items = append(h.items, v.(termCursor)) }
func (h *termHeap) Pop() any {
	v := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return v
}
