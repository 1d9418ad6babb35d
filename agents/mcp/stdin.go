package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// errInputFull is the write error once a stdio server has left too much
// of its input unread.
var errInputFull = errors.New("the server does not read its input")

// inputQueue is a stdio server's input, written by a goroutine of its own.
// The SDK writes a message to the server with no context, holding its
// connection's write lock: a server that stopped reading (hung, or busy
// in a long call once the pipe's buffer is full) held the call writing —
// past its timeout and its turn's end — and every other call, and closing
// the session (the manager's stop, the daemon's shutdown) waited for that
// write for ever. Write queues the message and returns; Close closes the
// pipe, which breaks off a write under way. More than max bytes unread
// means the server is hung: Write fails and onFull is called (it kills
// the server, whose session then ends and is restarted).
type inputQueue struct {
	w      io.WriteCloser
	max    int
	onFull func()
	wake   chan struct{} // capacity 1
	done   chan struct{} // closed when the writer returned

	mu     sync.Mutex // guards the fields below
	queue  [][]byte
	queued int   // bytes queued or being written
	err    error // the first write error, errInputFull, or os.ErrClosed after Close
}

// newInputQueue starts the writer of w; Close stops it.
func newInputQueue(w io.WriteCloser, max int, onFull func()) *inputQueue {
	q := &inputQueue{w: w, max: max, onFull: onFull, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// Write queues a copy of b.
func (q *inputQueue) Write(b []byte) (int, error) {
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return 0, err
	}
	if q.queued+len(b) > q.max {
		q.err = fmt.Errorf("%w (%d bytes unread)", errInputFull, q.queued)
		err := q.err
		q.mu.Unlock()
		q.onFull()
		return 0, err
	}
	q.queue = append(q.queue, bytes.Clone(b))
	q.queued += len(b)
	q.mu.Unlock()
	q.signal()
	return len(b), nil
}

func (q *inputQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run writes what is queued, in order, until a write fails or the queue
// is closed.
func (q *inputQueue) run() {
	defer close(q.done)
	for range q.wake {
		q.mu.Lock()
		batch, stop := q.queue, q.err != nil
		q.queue = nil
		q.mu.Unlock()
		for _, b := range batch {
			if _, err := q.w.Write(b); err != nil {
				q.mu.Lock()
				if q.err == nil {
					q.err = fmt.Errorf("writing to the server: %w", err)
				}
				q.mu.Unlock()
				return
			}
			q.mu.Lock()
			q.queued -= len(b)
			q.mu.Unlock()
		}
		if stop {
			return
		}
	}
}

// Close closes the server's input (what is still queued is dropped) and
// waits for the writer.
func (q *inputQueue) Close() error {
	q.mu.Lock()
	if q.err == nil {
		q.err = os.ErrClosed
	}
	q.mu.Unlock()
	err := q.w.Close()
	q.signal()
	<-q.done
	return err
}
