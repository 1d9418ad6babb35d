package openai

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// Request bodies are encoded into pooled buffers. A buffer goes back to
// the pool only when nobody can read it any more: net/http may read (and
// close) a request body after Do has returned, and a retry or redirect
// reads it again through GetBody. So every reader of the buffer holds a
// reference, as does the call that encoded it; the last to let go returns
// the buffer.

// maxPooledBody is the largest buffer kept for reuse (an image-laden
// history is sent from a fresh one rather than pinned in the pool).
const maxPooledBody = 1 << 20

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var errBodyReleased = errors.New("openai: request body already released")

// requestBody is one encoded request shared by the readers net/http asks
// for.
type requestBody struct {
	mu   sync.Mutex // guards the fields below and reads of buf
	buf  *bytes.Buffer
	refs int
}

// newRequestBody takes a buffer from the pool, held by the caller until
// release.
func newRequestBody() *requestBody {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	return &requestBody{buf: buf, refs: 1}
}

// open returns a reader of the body (http.Request.Body and GetBody); it
// fails once every holder has let go.
func (b *requestBody) open() (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refs == 0 {
		return nil, errBodyReleased
	}
	b.refs++
	return &bodyReader{body: b}, nil
}

// release drops one reference; the last returns the buffer to the pool.
func (b *requestBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked()
}

func (b *requestBody) releaseLocked() {
	b.refs--
	if b.refs > 0 {
		return
	}
	if b.buf.Cap() <= maxPooledBody {
		bodyPool.Put(b.buf)
	}
	b.buf = nil
}

// bodyReader reads a requestBody from the start; Close lets go of it.
type bodyReader struct {
	body   *requestBody
	off    int
	closed bool // guarded by body.mu
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.body.mu.Lock()
	defer r.body.mu.Unlock()
	if r.closed {
		return 0, errBodyReleased
	}
	data := r.body.buf.Bytes()
	if r.off >= len(data) {
		return 0, io.EOF
	}
	n := copy(p, data[r.off:])
	r.off += n
	return n, nil
}

func (r *bodyReader) Close() error {
	r.body.mu.Lock()
	defer r.body.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.body.releaseLocked()
	}
	return nil
}
