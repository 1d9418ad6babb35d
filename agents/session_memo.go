package agents

import (
	"sync"
	"unsafe"

	"github.com/gateway/gateway/agents/llm"
)

// sessionMemo is what a session keeps between its turns to spare redoing
// work on the history that did not change: its messages' estimates
// (history_sizes.go) and the provider's llm.Memo (the openai provider:
// the messages as last encoded). A turn takes it out of the memos and puts
// it back when it ends, so one turn at a time uses it; a memo may be
// dropped at any time and is then rebuilt.
type sessionMemo struct {
	sizes historySizes
	model llm.Memo
}

// cost is about how many bytes m holds.
func (m *sessionMemo) cost() int {
	return cap(m.sizes.msgs)*int(unsafe.Sizeof(msgSize{})) + m.model.Size
}

// Bounds on what the memos keep: beyond either, arbitrary sessions' memos
// are dropped. The bytes bound is the daemon's memory that buys the CPU:
// a 150-message session's encoding is some 30–60 KB, so 16 MiB keeps a
// few hundred sessions' (the ones talking now); the content blocks a memo
// names stay alive with it as well.
const (
	maxMemos     = 1024
	maxMemoBytes = 16 << 20
)

// memos keeps the sessions' memos between their turns, by session id.
type memos struct {
	mu    sync.Mutex // guards the fields below
	m     map[string]keptMemo
	bytes int // sum of the kept costs
}

type keptMemo struct {
	memo *sessionMemo
	cost int // when put
}

// take removes and returns the session's memo (an empty one when none is
// kept).
func (s *memos) take(sessionID string) *sessionMemo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.m[sessionID]; ok {
		delete(s.m, sessionID)
		s.bytes -= k.cost
		return k.memo
	}
	return &sessionMemo{}
}

// put keeps m for the session's next turn.
func (s *memos) put(sessionID string, m *sessionMemo) {
	cost := m.cost()
	if cost > maxMemoBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]keptMemo)
	}
	if k, ok := s.m[sessionID]; ok { // two turns of one session at once: keep the last
		delete(s.m, sessionID)
		s.bytes -= k.cost
	}
	for id, k := range s.m {
		if len(s.m) < maxMemos && s.bytes+cost <= maxMemoBytes {
			break
		}
		delete(s.m, id)
		s.bytes -= k.cost
	}
	s.m[sessionID] = keptMemo{memo: m, cost: cost}
	s.bytes += cost
}
