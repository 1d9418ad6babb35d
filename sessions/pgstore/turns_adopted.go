package pgstore

import (
	"sync"

	"github.com/gateway/gateway/sessions"
)

// Replies taken over from a stopped replica leave before their sessions'
// next replies (issue 22 item 7). beginTurnSQL keeps a turn from starting
// while an older record's reply is another handle's to send; once Orphans
// took the reply over it is this handle's, and takenReplies keeps the
// session's next turn waiting (BeginTurn answers not held) until it was
// sent. claim serialises the two: a BeginTurn's statement runs either
// before a take-over (the reply is still another's: unsent gates it) or
// after the take-over noted what it took.
type takenReplies struct {
	// claim is held for writing by a take-over of replies (statement and
	// notes), for reading by a BeginTurn's check and statement.
	claim sync.RWMutex

	mu sync.Mutex
	// replies maps the taken-over replies not yet sent to their sessions
	// and chunk counts.
	replies map[string]takenReply
}

type takenReply struct {
	session string
	chunks  int
}

// note records replies just taken over.
func (t *takenReplies) note(rs []sessions.Reply) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rs {
		if r.Sent >= len(r.Chunks) {
			continue
		}
		if t.replies == nil {
			t.replies = map[string]takenReply{}
		}
		t.replies[r.ID] = takenReply{session: r.SessionKey, chunks: len(r.Chunks)}
	}
}

// sent forgets reply id once its first n chunks are all it has (sent or
// given up).
func (t *takenReplies) sent(id string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.replies[id]; ok && n >= r.chunks {
		delete(t.replies, id)
	}
}

// waiting reports whether a taken-over reply of session is not sent yet.
func (t *takenReplies) waiting(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.replies {
		if r.session == session {
			return true
		}
	}
	return false
}
