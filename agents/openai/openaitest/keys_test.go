package openaitest

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKeyStatsCountsInFlightPerKey: two requests of key a held at once
// make an overlap (with the paths of both clients); requests of key b one
// after the other do not; untracked requests are not counted.
func TestKeyStatsCountsInFlightPerKey(t *testing.T) {
	s := NewServer(t)
	s.SetKey(func(r Request) string {
		k, _, _ := strings.Cut(r.LastUserText(), " ")
		if k == "none" {
			return ""
		}
		return k
	})
	hold := make(chan struct{})
	s.SetReply(func(_ int, r Request) Reply {
		rep := DefaultReply(0, r)
		if strings.HasSuffix(r.LastUserText(), "held") {
			rep.Hold = hold
		}
		return rep
	})
	post := func(base, text string) {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var wg sync.WaitGroup
	for _, via := range []string{"r1", "r2"} {
		wg.Add(1)
		go func() { defer wg.Done(); post(s.BaseURLVia(via), "a held") }()
	}
	for deadline := time.Now().Add(10 * time.Second); len(s.Requests()) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two held requests never arrived")
		}
	}
	post(s.BaseURL(), "b one")
	post(s.BaseURL(), "b two")
	post(s.BaseURL(), "none x")
	close(hold)
	wg.Wait()

	st := s.KeyStats()
	if a := st["a"]; a.Requests != 2 || a.MaxInFlight != 2 || len(a.Overlaps) != 1 {
		t.Fatalf("key a: %+v, want 2 requests, 2 in flight, one overlap", a)
	}
	o := st["a"].Overlaps[0]
	paths := o.Path + " " + strings.Join(o.Others, " ")
	if !strings.Contains(paths, "/via/r1/v1/chat/completions") || !strings.Contains(paths, "/via/r2/v1/chat/completions") {
		t.Errorf("overlap paths %q do not name both clients", paths)
	}
	if b := st["b"]; b.Requests != 2 || b.MaxInFlight != 1 || len(b.Overlaps) != 0 {
		t.Errorf("key b: %+v, want 2 requests one at a time", b)
	}
	if _, ok := st["none"]; ok || len(st) != 2 {
		t.Errorf("keys tracked: %v, want a and b", st)
	}
}
