package openaitest

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chat posts a streaming request and returns the content deltas.
func chat(t *testing.T, s *Server, text string) []string {
	t.Helper()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var deltas []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), `"content":"`); i >= 0 {
			rest := sc.Text()[i+len(`"content":"`):]
			if c := rest[:strings.IndexByte(rest, '"')]; c != "" {
				deltas = append(deltas, c)
			}
		}
	}
	return deltas
}

func TestNewDelayAndDeltas(t *testing.T) {
	s := New()
	defer s.Close()
	if got := chat(t, s, "hi there"); strings.Join(got, "") != "reply: hi there" || len(got) != 3 {
		t.Fatalf("default reply in %q", got)
	}
	s.SetReply(func(_ int, r Request) Reply {
		return Reply{Text: "ack " + r.LastUserText(), Deltas: 1, Delay: 50 * time.Millisecond}
	})
	start := time.Now()
	if got := chat(t, s, "m1"); len(got) != 1 || got[0] != "ack m1" {
		t.Fatalf("one delta: got %q", got)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("answered after %s, want the 50ms delay", d)
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("%d requests recorded, want 2", n)
	}
}

// TestForgetCountsWithoutKeeping: after Forget the fake still answers
// and counts every request, numbers them on (the script sees n = 1, 2),
// and keeps only those that came before.
func TestForgetCountsWithoutKeeping(t *testing.T) {
	s := New()
	defer s.Close()
	var seen []int
	s.SetReply(func(n int, r Request) Reply {
		seen = append(seen, n) // requests are sequential here
		return DefaultReply(n, r)
	})
	chat(t, s, "one")
	s.Forget()
	if got := strings.Join(chat(t, s, "two"), ""); got != "reply: two" {
		t.Fatalf("after Forget the fake answered %q", got)
	}
	chat(t, s, "three")
	if s.Calls() != 3 {
		t.Fatalf("Calls = %d, want 3", s.Calls())
	}
	if r := s.Requests(); len(r) != 1 || r[0].LastUserText() != "one" {
		t.Fatalf("Requests kept %d (want only the one before Forget)", len(r))
	}
	if len(seen) != 3 || seen[1] != 1 || seen[2] != 2 {
		t.Fatalf("script saw request numbers %v, want [0 1 2]", seen)
	}
}
