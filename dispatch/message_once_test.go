package dispatch

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/sessions"
)

// loseAnswer is a transport that makes the round trip of the first
// message post whose body holds text, then drops the answer: Discord
// created the message, the bot never hears so.
type loseAnswer struct {
	base http.RoundTripper
	text string

	mu   sync.Mutex
	lost bool
}

func (l *loseAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/messages") && req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	resp, err := l.base.RoundTrip(req)
	l.mu.Lock()
	lose := !l.lost && strings.Contains(string(body), l.text)
	l.lost = l.lost || lose
	l.mu.Unlock()
	if err != nil || !lose {
		return resp, err
	}
	_ = resp.Body.Close()
	return nil, errors.New("connection reset by peer")
}

// TestMessageToolReplyOnceAfterLostAnswer: the tool's reply on Discord
// whose answer is lost (the message was created) tells the model it may
// have been posted; a model that posts the same text again in the same
// turn gets the first message back (the enforced nonce of the turn's
// post), so the chat shows it once. Another turn posting the same text
// posts it anew.
func TestMessageToolReplyOnceAfterLostAnswer(t *testing.T) {
	const news = "the build is green"
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	m := &scriptModel{}
	h := newHarness(t, "", nil)
	useAgent(t, h, m, messageAgent)
	client := fake.Client()
	lose := &loseAnswer{base: client.Transport, text: news}
	a, err := discord.New("default", discord.Config{Token: "tok"},
		discord.Options{HTTPClient: &http.Client{Transport: lose}, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)

	reply := func(llm.Request) sessions.Message { return toolCalls(map[string]any{"action": "reply", "text": news}) }
	m.steps = append(m.steps, reply, reply, func(llm.Request) sessions.Message { return textMsg("done") })
	h.handle(in("discord", "777", "tell them"))
	h.drained()

	var posts []discordtest.Sent
	for _, s := range fake.Sent() {
		if s.Content == news {
			posts = append(posts, s)
		}
	}
	if len(posts) != 1 {
		t.Fatalf("the chat shows the tool's reply %d times, want once: %+v", len(posts), fake.Sent())
	}
	checkResults(t, toolResults(h, "agent:main:discord:direct:777"), []wantResult{
		{true, "may have been posted"},
		{false, posts[0].MessageID},
	})

	m.steps = append(m.steps, reply, func(llm.Request) sessions.Message { return textMsg("again") })
	h.handle(in("discord", "777", "tell them again"))
	h.drained()
	n := 0
	for _, s := range fake.Sent() {
		if s.Content == news {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the chat shows the reply %d times after a second turn posted it, want 2", n)
	}
}

// TestPostOnceID: the id of a post is the same for the same turn
// (whatever the order of its records), action, target and text, and
// differs when any of them does; a turn without records has none.
func TestPostOnceID(t *testing.T) {
	ws := []*work{{RecordID: "r2"}, {RecordID: "r1"}, {}}
	once := turnOnce(ws)
	if once != turnOnce([]*work{{RecordID: "r1"}, {RecordID: "r2"}}) {
		t.Fatalf("turnOnce depends on the records' order: %q", once)
	}
	id := postOnceID(once, "reply", "42", "hi")
	if id == "" || id != postOnceID(once, "reply", "42", "hi") {
		t.Fatalf("postOnceID = %q, not stable", id)
	}
	for _, other := range []string{
		postOnceID(turnOnce([]*work{{RecordID: "r1"}}), "reply", "42", "hi"),
		postOnceID(once, "ask", "42", "hi"),
		postOnceID(once, "reply", "43", "hi"),
		postOnceID(once, "reply", "42", "hi!"),
	} {
		if other == id {
			t.Errorf("postOnceID collides: %q", other)
		}
	}
	if got := postOnceID(turnOnce([]*work{{}}), "reply", "42", "hi"); got != "" {
		t.Errorf("postOnceID without records = %q, want none", got)
	}
}
