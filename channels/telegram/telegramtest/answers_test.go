package telegramtest

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"
)

// TestSecondPollerEndsFirstWith409: as the real Bot API does, a second
// concurrent getUpdates ends the first one with 409 Conflict; the answer
// is recorded (ErrorAnswers) with injected failures, and the successful
// poll is not.
func TestSecondPollerEndsFirstWith409(t *testing.T) {
	s := Start(t, Options{})
	first := make(chan map[string]any, 1)
	go func() {
		resp, err := s.Client().PostForm(s.URL+"/bot"+s.Token()+"/getUpdates", url.Values{"timeout": {"10"}})
		if err != nil {
			first <- nil
			return
		}
		defer resp.Body.Close()
		var r map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&r)
		first <- r
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitCalls(ctx, "getUpdates", 1); err != nil {
		t.Fatal(err)
	}
	// The call is counted when it arrives, before its handler registers
	// the poll: wait for that, or the second poll could come first.
	for polls := 0; polls == 0 && ctx.Err() == nil; {
		s.mu.Lock()
		polls = s.pollGen
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	if r := post(t, s, "getUpdates", url.Values{"timeout": {"0"}}); r["ok"] != true {
		t.Fatalf("second poll: %v", r)
	}
	select {
	case r := <-first:
		if r == nil || r["error_code"] != 409.0 {
			t.Fatalf("first poll answered %v, want 409", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first poll was not ended by the second")
	}
	s.FailNext("getUpdates", Failure{Code: 409})
	post(t, s, "getUpdates", url.Values{"timeout": {"0"}})
	s.FailNext("sendMessage", Failure{Code: 429, RetryAfter: 1})
	post(t, s, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})

	if got := s.ErrorAnswers("getUpdates", 409); len(got) != 2 {
		t.Errorf("getUpdates 409 answers %+v, want 2", got)
	}
	if got := s.ErrorAnswers("getUpdates", 0); len(got) != 2 {
		t.Errorf("getUpdates error answers %+v, want 2 (the successful polls are not errors)", got)
	}
	if got := s.ErrorAnswers("sendMessage", 0); len(got) != 1 || got[0].Code != 429 {
		t.Errorf("sendMessage error answers %+v, want one 429", got)
	}
}
