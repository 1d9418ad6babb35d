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
