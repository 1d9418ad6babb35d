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

// mergeIfDue merges the newest segments when there are more than
// maxSegments (the writer only; mergeFrom picks them).
func (x *searchIndex) mergeIfDue(ctx context.Context) error {
	x.segMu.RLock()
	n := len(x.segs)
	x.segMu.RUnlock()
	if n <= maxSegments {
		return nil
	}
	return x.mergeTail(ctx, false)
}

// mergeRatio is how much larger than the newer segments together an older
// segment may be and still be merged with them (mergeFrom).
const mergeRatio = 2

// mergeFrom is the index of the first of the segments (of docs messages,
// oldest first) a merge rewrites: the two newest, and each older one not
// more than mergeRatio times as large as those after it together. The
// segments stay of decreasing sizes and a message is rewritten a few
// times in its life (once each time its segment's size grows by about
// half), never once per merge: merging everything each time rewrote the
// whole index, months of messages where the sessions never reset, every
// maxSegments+1 flushes (TestSearchMergeCostDoesNotGrowWithIndexAge).
func mergeFrom(docs []int) int {
	if len(docs) < 2 {
		return 0
	}
	i := len(docs) - 2
	sum := docs[i] + docs[i+1]
	for i > 0 && docs[i-1] <= mergeRatio*sum {
		i--
		sum += docs[i]
	}
	return i
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
func (x *searchIndex) merge(ctx context.Context) error { return x.mergeTail(ctx, true) }

// mergeTail rewrites the newest segments as one (all of them when all is
// set or mergeFrom picks the oldest), without the messages of dropped
// sessions. A merge of all of them also leaves out the messages of
// sessions that are no longer current; one that keeps older segments
// keeps those (a session switched back to must find the messages its
// older segments hold, and its covered offset, as they were).
func (x *searchIndex) mergeTail(ctx context.Context, all bool) error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.segMu.RLock()
	segs := append([]*segment(nil), x.segs...)
	x.segMu.RUnlock()
	if len(segs) < 2 {
		return nil
	}
	from := 0
	if !all {
		docs := make([]int, len(segs))
		for i, s := range segs {
			docs[i] = s.nDocs
		}
		from = mergeFrom(docs)
	}
	kept, olds := segs[:from], segs[from:]
	full := from == 0
	var current map[string]bool
	if full {
		var err error
		if current, err = x.currentAll(); err != nil {
			return fmt.Errorf("search: merge: %w", err)
		}
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
			if g, ok := dropped[k]; (full && !current[k]) || (ok && s.gen <= g) {
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
	// The dropped marks the merged segment no longer needs go: all of them
	// after a full merge, else those older than every kept segment (a
	// dropped mark newer than the merge's input (none: flushMu) would
	// stay).
	stale := func(g uint64) bool { return g < gen && (full || g < kept[0].gen) }
	var keepDropped map[string]uint64
	for k, g := range dropped {
		if !stale(g) {
			if keepDropped == nil {
				keepDropped = map[string]uint64{}
			}
			keepDropped[k] = g
		}
	}
	gens := make([]uint64, 0, len(kept)+1)
	for _, s := range kept {
		gens = append(gens, s.gen)
	}
	if err := x.writeManifest(append(gens, gen), gen+1, keepDropped); err != nil {
		_ = os.Remove(path)
		return err
	}
	merged, err := openSegment(path, gen)
	if err != nil {
		return err
	}
	x.segMu.Lock()
	x.segs = append(append(append([]*segment(nil), kept...), merged), x.segs[len(segs):]...)
	x.segMu.Unlock()
	x.mu.Lock()
	for k, g := range x.dropped {
		if stale(g) {
			delete(x.dropped, k)
		}
	}
	var gone []string
	if full {
		for k := range x.covered {
			if _, kept := rowOf[k]; !kept && !current[k] {
				gone = append(gone, k)
			}
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
	x.log.Info("search index: merged", zap.Int("segments", len(olds)), zap.Int("kept", len(kept)), zap.Int("docs", len(w.docs)),
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
