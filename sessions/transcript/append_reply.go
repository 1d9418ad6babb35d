package transcript

import (
	"context"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// A turn's final answer made durable by its reply's journal line instead
// of an fsync of the transcript (issue 21, the files backend): an fsync is
// per file, so a burst over many chats paid one a reply, which no group
// commit could share. When the append of the answer carries a
// sessions.ReplyAhead whose journal is a ReplyJournal, the append writes
// its lines (the kernel has them: they survive the death of the process),
// then hands the journal the reply together with every byte of the file
// not yet known durable — the turn's inputs, appended lazily, and the
// answer — in one durable write that the journal's group fsync shares
// with the other turns and accepts. After a power loss the journal writes
// those bytes back into the file where they are missing, and it fsyncs
// the file before it drops a line that holds them. Where the journal
// cannot take it (no durable offset known yet, a reply it stores only with
// Ready, a failed write), the append fsyncs the file as before and the
// caller stores the reply with Ready.

// ReplyJournal is an outbox (sessions.Delivery) that stores a reply with
// transcript lines: ReadyWithLines returns once one durable write holds
// the reply (as Ready stores it) and lines, the bytes of the transcript at
// path from offset off to its end. The journal restores them into the file
// after a power loss and fsyncs the file before it forgets them. It fails,
// having stored nothing, when it cannot.
type ReplyJournal interface {
	sessions.Delivery
	ReadyWithLines(r sessions.Reply, path string, off int64, lines []byte) error
}

// durability is how an append is made durable before it returns.
type durability struct {
	sync  bool        // fsynced (or journaled with reply); false: the kernel has the lines
	reply *replyAhead // with sync: the reply whose journal line may hold the lines instead
}

// replyAhead is a sessions.ReplyAhead whose journal takes lines.
type replyAhead struct {
	ra *sessions.ReplyAhead
	j  ReplyJournal
}

// replyJournalFrom returns the ReplyAhead ctx carries when its journal is
// a ReplyJournal; nil otherwise.
func replyJournalFrom(ctx context.Context) *replyAhead {
	ra := sessions.ReplyAheadFrom(ctx)
	if ra == nil || ra.Build == nil {
		return nil
	}
	j, ok := ra.Journal.(ReplyJournal)
	if !ok {
		return nil
	}
	return &replyAhead{ra: ra, j: j}
}

// pendingTail is the bytes [off, end) of the file an append hands to a
// reply journal.
type pendingTail struct {
	off, end int64
	lines    []byte
}

// maxTail bounds the bytes a reply's journal line holds; a longer stretch
// not known durable (a long turn of tool calls) is fsynced instead.
const maxTail = 1 << 20

// tailLocked reads the bytes of f from t.covered to end and claims them
// (covered = end). It returns nil when the durable offset is unknown (no
// fsync by this File yet: bytes another File left unsynced could be
// missed), or the stretch is too long or cannot be read. The caller holds
// t.mu.
func (t *File) tailLocked(f handle, end int64) *pendingTail {
	off := t.covered
	if off < 0 || end <= off || end-off > maxTail {
		return nil
	}
	b := make([]byte, end-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil
	}
	t.covered = end
	return &pendingTail{off: off, end: end, lines: b}
}

// journaled stores rj's reply for the append of nodes (one entry) with
// tail in rj's journal, and reports whether it did: the append is then
// durable and the reply taken.
func (t *File) journaled(rj *replyAhead, tail *pendingTail, nodes []*Node) bool {
	if rj == nil || tail == nil || len(nodes) != 1 {
		return false
	}
	rp, _ := rj.ra.Build(nodes[0].ID)
	if err := rj.j.ReadyWithLines(rp, t.path, tail.off, tail.lines); err != nil {
		t.log.Debug("reply not stored with the transcript's lines; fsyncing the transcript", zap.Error(err))
		return false
	}
	rj.ra.Take(rp)
	return true
}

// untail gives back the claim of tail, whose bytes neither the journal nor
// an fsync made durable.
func (t *File) untail(tail *pendingTail) {
	if tail == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.covered == tail.end {
		t.covered = tail.off
	}
}

// synced records that an fsync covered write seq, which ended the file at
// end: the bytes up to end are durable, if no write came since (one could
// have cut them).
func (t *File) synced(seq uint64, end int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.written.Load() == seq && end > t.covered {
		t.covered = end
	}
}
