package transcript

import (
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// ErrFirstKeptNotInChain returns AppendCompaction's refusal of firstKept
// (wrapping sessions.ErrNotInChain): every backend refuses with the same
// text.
func ErrFirstKeptNotInChain(firstKept string) error {
	return fmt.Errorf("transcript: compaction: first kept entry %q is %w", firstKept, sessions.ErrNotInChain)
}

// Chain is a set of decoded transcript entries and the chain through them
// that ends at the leaf, the entry added at the highest position (SPEC
// §3.4), with no I/O: Context, History and Records give what a File gives
// for the same entries, so the PostgreSQL backend, which reads entries
// from rows, answers as the files backend does. A Chain
// is not safe for concurrent use.
type Chain struct {
	st *fileState
}

// NewChain returns an empty chain. complete says whether the entries to be
// added start at the beginning of the transcript; when they do not, a
// chain walk that needs an entry not added makes Context report !ok, so
// the caller reads more and tries again.
func NewChain(complete bool) *Chain {
	st := newFileState(nil)
	if !complete {
		st.lo = 1 // resolve: entries precede lo and are not loaded
	}
	return &Chain{st: st}
}

// Add decodes one entry (one line of the JSONL, without its newline) found
// at pos; positions grow in the order entries were written (byte offset,
// sequence number) and must be >= 0. A session header or a blank line is
// ignored; an entry whose JSON cannot be read is an error. An entry that
// continues the chain from its leaf (the usual next entry) extends the
// context Context built, as a File's append does; any other makes the
// next Context resolve the chain again.
func (c *Chain) Add(line []byte, pos int64) error {
	n, err := ParseEntry(line, pos)
	if err != nil {
		return fmt.Errorf("transcript: entry at %d: %w", pos, err)
	}
	if n != nil {
		c.add(n)
	}
	return nil
}

// AddMessage adds the message entry id (child of parent) found at pos
// already decoded, as Add adds its line: m must be the normalised message
// EncodeMessage returned for that line, and MessageRoundTrips(&m) must
// hold (decoding the line gives m). An appender that holds what it wrote
// so skips parsing it again. The chain keeps m: its slices must not change
// afterwards.
func (c *Chain) AddMessage(id, parent string, m sessions.Message, pos int64) {
	if parent == id {
		parent = "" // as ParseEntry reads such a line
	}
	c.add(&Node{ID: id, Parent: parent, Off: pos, Kind: KindMessage, IsMessage: true, Msg: &m})
}

// add records n: an entry that continues the chain from its leaf extends
// the context built, any other makes the next Context resolve again.
func (c *Chain) add(n *Node) {
	st := c.st
	_, seen := st.nodes[n.ID]
	extends := st.view != nil && !seen && n.Parent == st.leaf && n.Off > st.leafOff
	st.add(n)
	if extends {
		st.extendView([]*Node{n})
	} else {
		st.view, st.ctx = nil, nil
	}
}

// Leaf is the id of the chain's last entry ("" when none was added).
func (c *Chain) Leaf() string { return c.st.leaf }

// Messages is the number of message entries added (what Stats counts).
func (c *Chain) Messages() int { return c.st.msgs }

// Context rebuilds what the model is sent from the chain ending at the
// leaf: the latest compaction's summary, the entries it kept and those
// after it. ok is false when the chain needs an entry that was not added
// (and the chain is not complete).
func (c *Chain) Context() (ctx sessions.Context, ok bool) {
	st := c.st
	if st.view == nil {
		v, more := st.resolve()
		if more {
			return sessions.Context{}, false
		}
		st.view, st.ctx = v, nil
	}
	if st.ctx == nil {
		built := buildContext(st.view, st.leaf)
		st.ctx = &built
	}
	st.ctxShared = true
	return shareContext(st.ctx), true // nil slices when empty, as File.Context gives
}

// History is every message of the chain ending at the leaf, compactions
// ignored, as far back as the entries added reach.
func (c *Chain) History() []sessions.Message { return c.st.history() }

// Records is TranscriptLog.Records over the entries added: the caller adds
// at least the chain's last RecordsLookback entries.
func (c *Chain) Records(ids []string) sessions.RecordsState {
	return recordsOf(c.st.nodes, c.st.leaf, ids)
}
