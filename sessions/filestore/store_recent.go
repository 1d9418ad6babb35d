package filestore

import (
	"container/heap"
	"github.com/gateway/gateway/sessions"
	"slices"
	"strings"
)

// Recent returns the n most recently updated entries, most recent first
// (List's order), decoding only those: O(entries · log n).
func (s *Store) Recent(n int) ([]sessions.Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	s.awaitRepair()
	s.mu.Lock()
	if err := s.viewLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// Select on the compact recency map, then copy only the n entries.
	h := make(recentHeap, 0, n+1)
	for k, sl := range s.slots {
		c := recentKey{t: sl.updated, k: k}
		if len(h) < n {
			heap.Push(&h, c)
			continue
		}
		if c.newer(h[0]) {
			h[0] = c
			heap.Fix(&h, 0)
		}
	}
	out := make([]sessions.Entry, 0, len(h))
	for _, c := range h {
		if sl, ok := s.slots[c.k]; ok {
			out = append(out, sl.entry())
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b sessions.Entry) int {
		if newer(&a, &b) {
			return -1
		}
		if newer(&b, &a) {
			return 1
		}
		return 0
	})
	return out, nil
}

// newer orders entries as List does: later updatedAt first, then key.
func newer(a, b *sessions.Entry) bool {
	if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
		return c > 0
	}
	return strings.Compare(a.SessionKey, b.SessionKey) < 0
}

// recentKey is one entry's place in the recency order.
type recentKey struct {
	t int64 // updatedAt, unix ns
	k string
}

// newer orders as List does: later updatedAt first, then key.
func (a recentKey) newer(b recentKey) bool {
	if a.t != b.t {
		return a.t > b.t
	}
	return a.k < b.k
}

// recentHeap is a min-heap by recency: its root is the oldest kept.
type recentHeap []recentKey

func (h recentHeap) Len() int           { return len(h) }
func (h recentHeap) Less(i, j int) bool { return h[j].newer(h[i]) }
func (h recentHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recentHeap) Push(x any)        { *h = append(*h, x.(recentKey)) }
func (h *recentHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
