package filestore

import (
	"testing"
	"time"
)

// firstAnswer starts on dir as the daemon does and returns how long the
// first Get took to answer from Open, and how many times the start read
// the index whole.
func firstAnswer(t *testing.T, dir string, n int) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	m, err := Open(startOptions(dir, n))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}()
	s, err := m.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get(startKey(n / 2)); err != nil || !ok {
		t.Fatalf("first Get of %d sessions: %v %v", n, ok, err)
	}
	took := time.Since(start)
	// Let maintenance at Open run too: it must not read the index again.
	if _, err := m.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return took, s.reloads
}

// TestStartScalesLinearly (issue 21): a start answers its first Get in time
// linear in the number of sessions, reading the index once. Ten times the
// sessions may take at most 50 times as long: linear work takes 10 to 27
// here (more than 10 as the index outgrows the caches and the heap the
// first collections), quadratic work 100 or more (an O(N^2) pass put into
// the load took 248). A relative bound, which a slow machine does not
// break; each size is timed at its fastest of three starts, the sizes
// taking turns so that a change in the machine's load falls on both.
func TestStartScalesLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index of 100,000 sessions (seconds, more under -race)")
	}
	const small, large = 10000, 100000
	dirs := map[int]string{}
	for _, n := range []int{small, large} {
		dirs[n] = t.TempDir()
		seedIndex(t, dirs[n], n)
	}
	fastest := map[int]time.Duration{}
	for range 3 {
		for _, n := range []int{small, large} {
			took, reloads := firstAnswer(t, dirs[n], n)
			if reloads != 1 {
				t.Errorf("a start with %d sessions read the index %d times, want once", n, reloads)
			}
			if d, ok := fastest[n]; !ok || took < d {
				fastest[n] = took
			}
		}
	}
	ratio := float64(fastest[large]) / float64(fastest[small])
	t.Logf("first answer: %d sessions %v, %d sessions %v (x%.1f)", small, fastest[small], large, fastest[large], ratio)
	if ratio > 50 {
		t.Errorf("%d sessions took %.1f times as long as %d to answer the first Get (%v, %v): want at most 50 (linear)",
			large, ratio, small, fastest[large], fastest[small])
	}
}
