package mcp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
)

// An input queue whose reader stops reading takes writes up to its limit
// of unread bytes, then fails them with errInputFull and calls onFull once
// (the server is killed); Close breaks off the write under way. A reader
// gets everything that was queued, in order.
func TestInputQueueBoundsWhatIsUnread(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	full := 0
	q := newInputQueue(w, 256<<10, func() { full++ })
	chunk := bytes.Repeat([]byte("x"), 100<<10)
	var n int
	for range 10 {
		if _, err := q.Write(chunk); err != nil {
			if !errors.Is(err, errInputFull) {
				t.Fatalf("write: %v, want errInputFull", err)
			}
			break
		}
		n++
	}
	if full != 1 || n == 0 || n > 3+1 { // the pipe holds 64 KiB, the queue 256 KiB
		t.Fatalf("%d writes taken, onFull called %d times", n, full)
	}
	if _, err := q.Write([]byte("y")); !errors.Is(err, errInputFull) {
		t.Fatalf("write after full: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// A reader gets the writes in order.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	q2 := newInputQueue(w2, 1<<20, func() { t.Error("full") })
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r2)
		got <- b
	}()
	var want bytes.Buffer
	for i := range 100 {
		msg := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
		want.Write(msg)
		if _, err := q2.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	// Close drops what is still queued: wait until all was written.
	for {
		q2.mu.Lock()
		left := q2.queued
		q2.mu.Unlock()
		if left == 0 {
			break
		}
		runtime.Gosched()
	}
	if err := q2.Close(); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("read %d bytes, want the %d written in order", len(b), want.Len())
	}
	r2.Close()
}
