package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseHTML(t *testing.T) {
	tests := []struct {
		in, vis string
		bad     bool
	}{
		{in: "<b>x</b> &lt;y&gt; &amp;", vis: "x <y> &"},
		{in: `<a href="https://e.com/?a=1&amp;b=2">l</a>`, vis: "l"},
		{in: `<pre><code class="language-go">x</code></pre>`, vis: "x"},
		{in: "<b>x", bad: true},
		{in: "<b><i>x</b></i>", bad: true},
		{in: "<script>x</script>", bad: true},
		{in: "a < b", bad: true},
		{in: "a & b", bad: true},
		{in: "<a>x</a>", bad: true},
	}
	for _, tt := range tests {
		vis, err := ParseHTML(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && vis != tt.vis) {
			t.Errorf("ParseHTML(%q) = %q, %v; want %q, bad=%v", tt.in, vis, err, tt.vis, tt.bad)
		}
	}
}

func TestEntities(t *testing.T) {
	got := Entities("/start@my_bot hi 😀 @some_user, @x")
	want := []map[string]any{
		{"type": "bot_command", "offset": 0, "length": 13},
		{"type": "mention", "offset": 20, "length": 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entities (-want +got):\n%s", diff)
	}
	got = Entities("@my_bot /new@my_bot a/b\n/help")
	want = []map[string]any{
		{"type": "mention", "offset": 0, "length": 7},
		{"type": "bot_command", "offset": 8, "length": 11},
		{"type": "bot_command", "offset": 24, "length": 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entities of commands after a mention (-want +got):\n%s", diff)
	}
}

func post(t *testing.T, s *Server, method string, form url.Values) map[string]any {
	t.Helper()
	resp, err := s.Client().PostForm(s.URL+"/bot"+s.Token()+"/"+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGetUpdatesOffsetsAndLongPoll(t *testing.T) {
	s := Start(t, Options{})
	u1 := s.DM(1, "one")
	u2 := s.DM(1, "two")
	r := post(t, s, "getUpdates", url.Values{"timeout": {"0"}})
	if n := len(r["result"].([]any)); n != 2 {
		t.Fatalf("got %d updates, want 2", n)
	}
	r = post(t, s, "getUpdates", url.Values{"offset": {itoa(u2)}, "timeout": {"0"}})
	if n := len(r["result"].([]any)); n != 1 || s.Confirmed() != u2 || s.Pending() != 1 {
		t.Fatalf("after offset %d: %d updates, confirmed %d, pending %d", u2, n, s.Confirmed(), s.Pending())
	}
	_ = u1
	done := make(chan int, 1)
	go func() { // no t.Fatal off the test goroutine
		resp, err := s.Client().PostForm(s.URL+"/bot"+s.Token()+"/getUpdates",
			url.Values{"offset": {itoa(u2 + 1)}, "timeout": {"10"}})
		if err != nil {
			done <- -1
			return
		}
		defer resp.Body.Close()
		var r struct{ Result []json.RawMessage }
		if json.NewDecoder(resp.Body).Decode(&r) != nil {
			done <- -1
			return
		}
		done <- len(r.Result)
	}()
	if err := s.WaitCalls(context.Background(), "getUpdates", 3); err != nil {
		t.Fatal(err)
	}
	s.DM(1, "three") // wakes the long poll
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("long poll returned %d updates, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("long poll not woken by a new update")
	}
}

func TestFailuresAndWebhookConflict(t *testing.T) {
	s := Start(t, Options{})
	s.FailNext("sendMessage", Failure{Code: 429, RetryAfter: 7})
	r := post(t, s, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
	if r["ok"] != false || r["parameters"].(map[string]any)["retry_after"] != 7.0 {
		t.Fatalf("429 answer %v", r)
	}
	r = post(t, s, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"<b>x"}, "parse_mode": {"HTML"}})
	if r["ok"] != false || !strings.Contains(r["description"].(string), "can't parse entities") {
		t.Fatalf("bad HTML answer %v", r)
	}
	r = post(t, s, "sendMessage", url.Values{"chat_id": {"-5"}, "text": {"x"}, "message_thread_id": {"1"}})
	if r["ok"] != false {
		t.Fatalf("thread 1 accepted: %v", r)
	}
	post(t, s, "setWebhook", url.Values{"url": {"https://x/y"}, "secret_token": {"abc"}})
	r = post(t, s, "getUpdates", url.Values{})
	if r["error_code"] != 409.0 {
		t.Fatalf("getUpdates with webhook: %v", r)
	}
	if resp, err := s.Client().Get(s.URL + "/botWRONG/getMe"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestOnSentAndSentCount(t *testing.T) {
	type seen struct {
		method, text string
	}
	got := make(chan seen, 4)
	s := Start(t, Options{OnSent: func(m Sent, at time.Time) {
		if at.IsZero() {
			t.Error("OnSent without a time")
		}
		got <- seen{m.Method, m.Text}
	}})
	r := post(t, s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"hello"}})
	id := strconv.Itoa(int(r["result"].(map[string]any)["message_id"].(float64)))
	post(t, s, "editMessageText", url.Values{"chat_id": {"7"}, "message_id": {id}, "text": {"hello again"}})
	post(t, s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {" "}}) // refused: not recorded
	want := []seen{{"sendMessage", "hello"}, {"editMessageText", "hello again"}}
	for i, w := range want {
		if g := <-got; g != w {
			t.Fatalf("OnSent call %d: got %+v, want %+v", i, g, w)
		}
	}
	if n := s.SentCount(); n != 2 {
		t.Fatalf("SentCount = %d, want 2", n)
	}
}
