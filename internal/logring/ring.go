// Package logring keeps the daemon's most recent log lines in memory for
// `gateway logs` (GET /api/logs): a zapcore.Core that encodes each entry
// as one JSON line into a bounded ring, and followers that get every new
// line.
//
// Concurrency: a Ring is safe for concurrent use. Writing never blocks on
// a follower: a follower that does not keep up loses lines (it is told how
// many). It starts no goroutine.
package logring

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultSize is how many lines a Ring keeps when New is given 0.
const DefaultSize = 2000

// followBuffer is how many lines a follower may fall behind.
const followBuffer = 256

// Ring holds the last lines written.
type Ring struct {
	mu        sync.Mutex // guards the fields below
	lines     [][]byte   // ring storage, len == size once full
	next      int        // where the next line goes
	full      bool
	followers map[*Follower]struct{}
}

// New returns a ring of size lines (DefaultSize when size <= 0).
func New(size int) *Ring {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring{lines: make([][]byte, size), followers: map[*Follower]struct{}{}}
}

// Core returns a core that writes entries at lvl and above into r, as
// JSON lines (zap's production encoder).
func (r *Ring) Core(lvl zapcore.LevelEnabler) zapcore.Core {
	return zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(r), lvl)
}

// Write adds one encoded entry (one line, with its newline); it
// implements io.Writer for the core.
func (r *Ring) Write(p []byte) (int, error) {
	line := append([]byte(nil), p...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	for f := range r.followers {
		select {
		case f.lines <- line:
		default:
			f.mu.Lock()
			f.dropped++
			f.mu.Unlock()
		}
	}
	return len(p), nil
}

// Last returns up to n of the most recent lines, oldest first.
func (r *Ring) Last(n int) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastLocked(n)
}

func (r *Ring) lastLocked(n int) [][]byte {
	count := r.next
	if r.full {
		count = len(r.lines)
	}
	n = min(n, count)
	out := make([][]byte, 0, n)
	for i := count - n; i < count; i++ {
		idx := i
		if r.full {
			idx = (r.next + i) % len(r.lines)
		}
		out = append(out, r.lines[idx])
	}
	return out
}

// Follow returns up to n recent lines and a follower that gets every line
// written after them, until Stop.
func (r *Ring) Follow(n int) ([][]byte, *Follower) {
	f := &Follower{r: r, lines: make(chan []byte, followBuffer)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.followers[f] = struct{}{}
	return r.lastLocked(n), f
}

// Follower receives new lines. Its owner calls Stop when done.
type Follower struct {
	r     *Ring
	lines chan []byte

	mu      sync.Mutex
	dropped int // guarded by mu
}

// Lines delivers new lines; it is never closed (select on your own
// context beside it).
func (f *Follower) Lines() <-chan []byte { return f.lines }

// Dropped returns how many lines were lost since the last call because
// the follower fell behind, and resets the count.
func (f *Follower) Dropped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.dropped
	f.dropped = 0
	return n
}

// Stop detaches the follower from the ring.
func (f *Follower) Stop() {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	delete(f.r.followers, f)
}
