package telegramtest_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestStopRestart: a stopped server refuses connections; restarted, it
// answers at the same URL with its pending updates kept.
func TestStopRestart(t *testing.T) {
	s := telegramtest.Start(t, telegramtest.Options{})
	call := func(method string) (*http.Response, error) {
		return s.Client().PostForm(s.URL+"/bot"+s.Token()+"/"+method, url.Values{"timeout": {"0"}})
	}
	res, err := call("getMe")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("getMe before the outage: %v %v", res, err)
	}
	res.Body.Close()
	s.DM(1, "kept across the outage")
	s.Stop()
	s.Stop() // idempotent
	if res, err := call("getMe"); err == nil {
		res.Body.Close()
		t.Fatalf("getMe while stopped answered %s", res.Status)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("a second Restart without Stop succeeded")
	}
	res, err = call("getUpdates")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("getUpdates after the restart: %v %v", res, err)
	}
	res.Body.Close()
	if got := s.CallTimes("getUpdates"); len(got) != 1 {
		t.Fatalf("getUpdates calls recorded: %d, want 1", len(got))
	}
	if _, ok := s.Update(1); !ok {
		t.Fatal("the pending update was lost across the outage")
	}
}
