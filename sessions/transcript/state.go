package transcript

import (
	"os"

	"github.com/gateway/gateway/sessions"
)

// The parsed state of a transcript and the chain through it, shared by a
// File (the part of its file read so far) and a Chain (the entries added).

// fileState is what is known about a transcript file. Entries at offsets
// in [lo, end) are all in nodes.
type fileState struct {
	fi        os.FileInfo  // identity, size and mtime when last seen; nil for a missing file
	hdr       *SessionLine // nil when the file holds no header yet
	headerEnd int64        // offset just past the header line
	end       int64        // where the next append goes
	tornAt    int64        // start of a torn last line to cut before appending, -1 if none
	needNL    bool         // the last entry line lacks its '\n'
	lo        int64
	block     int64
	nodes     map[string]*Node
	leaf      string
	leafOff   int64
	msgs      int // message entries parsed in [lo, end)
	parsed    int // lines parsed since load (observability and tests)
	badLines  int // whole lines skipped as unreadable (forward load)

	view *chainView        // chain ending at leaf; nil until resolved
	ctx  *sessions.Context // normalised context of view; nil until built
	// ctxShared: ctx's slices were handed out (shareContext) since they
	// were built or copied, so an element of them must not be changed.
	ctxShared bool
}

func newFileState(fi os.FileInfo) *fileState {
	return &fileState{fi: fi, tornAt: -1, leafOff: -1, block: firstBlock, nodes: make(map[string]*Node)}
}

// same reports whether fi is the file st describes, unchanged.
func (st *fileState) same(fi os.FileInfo) bool {
	if st.fi == nil || fi == nil {
		return st.fi == nil && fi == nil
	}
	return sameFile(st.fi, fi) && st.fi.Size() == fi.Size() && st.fi.ModTime().Equal(fi.ModTime())
}

func (st *fileState) add(n *Node) {
	if n.IsMessage {
		st.msgs++
	}
	if old, ok := st.nodes[n.ID]; ok && old.Off > n.Off {
		return // a later line with the same id wins, as in pi
	}
	st.nodes[n.ID] = n
	if n.Off > st.leafOff {
		st.leaf, st.leafOff = n.ID, n.Off
	}
}

// extendView updates the cached chain after nodes were added that
// continue it from its leaf (a File's append; a Chain's entry whose parent
// was the leaf): messages extend it; a compaction re-resolves it (on the
// next read). A context handed out is never changed: a merge into its last
// message copies it first.
func (st *fileState) extendView(nodes []*Node) {
	for _, n := range nodes {
		if n.Kind == KindCompaction {
			st.view, st.ctx = nil, nil
			return
		}
	}
	if st.view == nil {
		st.ctx = nil
		return
	}
	if st.ctx != nil && st.ctxShared && mergesIntoLast(st.ctx, nodes) {
		c := copyContext(st.ctx) // the merge must not reach what was handed out
		st.ctx, st.ctxShared = &c, false
	}
	if st.ctx != nil && !extendContext(st.ctx, nodes) {
		st.ctx = nil
	}
	for _, n := range nodes {
		if n.Kind == KindMessage {
			st.view.entries = append(st.view.entries, n)
		}
	}
}

// chainView is the chain ending at the leaf, cut at the latest compaction.
type chainView struct {
	comp    *Node   // latest compaction in the chain, nil if none
	entries []*Node // entries sent to the model, in order (kept, then after comp)
}

// resolve walks from the leaf. more is true when the walk needs an entry
// that precedes lo.
func (st *fileState) resolve() (v *chainView, more bool) {
	if st.leaf == "" {
		return &chainView{}, st.lo > st.headerEnd
	}
	var (
		after, kept []*Node // reverse order
		comp        *Node
		found       bool
	)
	cur, steps := st.leaf, 0
	for cur != "" && steps <= len(st.nodes) {
		n, ok := st.nodes[cur]
		if !ok {
			if st.lo > st.headerEnd {
				return nil, true
			}
			break // dangling parent: the chain starts here, as in pi
		}
		steps++
		switch {
		case comp == nil && n.Kind == KindCompaction:
			comp = n
			if n.Comp.FirstKeptEntryID == "" {
				cur = ""
				continue
			}
		case comp == nil:
			after = append(after, n)
		default:
			kept = append(kept, n)
			if n.ID == comp.Comp.FirstKeptEntryID {
				found = true
				cur = ""
				continue
			}
		}
		cur = n.Parent
	}
	v = &chainView{comp: comp}
	if found {
		v.entries = appendReversed(v.entries, kept)
	}
	v.entries = appendReversed(v.entries, after)
	return v, false
}

func appendReversed(dst, src []*Node) []*Node {
	for i := len(src) - 1; i >= 0; i-- {
		if src[i].Kind == KindMessage {
			dst = append(dst, src[i])
		}
	}
	return dst
}

// history returns the message entries of the whole chain, compactions
// ignored. The caller has loaded everything.
func (st *fileState) history() []sessions.Message {
	var rev []*Node
	cur, steps := st.leaf, 0
	for cur != "" && steps <= len(st.nodes) {
		n, ok := st.nodes[cur]
		if !ok {
			break
		}
		steps++
		if n.Kind == KindMessage {
			rev = append(rev, n)
		}
		cur = n.Parent
	}
	out := make([]sessions.Message, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, *rev[i].Msg)
	}
	return out
}
