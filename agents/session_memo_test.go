package agents

import (
	"fmt"
	"testing"
)

// TestMemosBounded: the memos keep at most maxMemos sessions and
// maxMemoBytes, give a kept memo back once, and keep none larger than the
// bound.
func TestMemosBounded(t *testing.T) {
	var s memos
	first := s.take("a")
	first.model.Size = 100
	s.put("a", first)
	if got := s.take("a"); got != first {
		t.Fatal("the memo put was not given back")
	}
	if got := s.take("a"); got == first || got.model.Size != 0 {
		t.Fatal("a memo taken was given back again")
	}
	for i := range maxMemos + 10 {
		m := &sessionMemo{}
		m.model.Size = 10
		s.put(fmt.Sprint(i), m)
	}
	if len(s.m) > maxMemos || s.bytes != 10*len(s.m) {
		t.Fatalf("%d memos of %d bytes kept, bound %d", len(s.m), s.bytes, maxMemos)
	}
	big := &sessionMemo{}
	big.model.Size = maxMemoBytes / 2
	s.put("big", big)
	s.put("big2", big)
	if s.bytes > maxMemoBytes {
		t.Fatalf("%d bytes kept, bound %d", s.bytes, maxMemoBytes)
	}
	huge := &sessionMemo{}
	huge.model.Size = maxMemoBytes + 1
	s.put("huge", huge)
	if _, ok := s.m["huge"]; ok {
		t.Fatal("a memo past the bound was kept")
	}
}
