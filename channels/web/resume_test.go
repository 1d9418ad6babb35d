package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/gateway/gateway/channels"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig serves an adapter whose handler accepts every message and records
// it; the test plays the dispatcher (Delta, Tool, Send).
type rig struct {
	a   *Adapter
	srv *httptest.Server

	mu  sync.Mutex
	ins []channels.Inbound
}

func newRig(t *testing.T, turnOf func(context.Context, channels.Inbound) (channels.TurnState, error)) *rig {
	t.Helper()
	return newRigWith(t, Options{TurnOf: turnOf})
}

// newRigWith is newRig with the adapter's options.
func newRigWith(t *testing.T, opts Options) *rig {
	t.Helper()
	return newRigRefusing(t, opts, nil)
}

// newRigRefusing is newRigWith whose handler answers refuse's error for
// a message it refuses (refuse nil or answering nil: accepted).
func newRigRefusing(t *testing.T, opts Options, refuse func(channels.Inbound) error) *rig {
	t.Helper()
	r := &rig{}
	r.a = New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.a.Run(ctx, func(ctx context.Context, in channels.Inbound) error {
			if refuse != nil {
				if err := refuse(in); err != nil {
					return err
				}
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, seen := range r.ins {
				if seen.ChatID == in.ChatID && seen.MessageID == in.MessageID {
					return channels.ErrDuplicate // as the journal does
				}
			}
			r.ins = append(r.ins, in)
			return nil
		})
	}()
	<-r.a.Accepting()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", r.a.ServeChat)
	mux.HandleFunc("GET /api/agents/{id}/chat/turns/{turn}", r.a.ServeTurn)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(func() { r.srv.CloseClientConnections(); r.srv.Close(); cancel(); <-done })
	return r
}

// sse is one event as a client sees it.
type sse struct{ ID, Name, Data string }

// stream reads events from an SSE body one at a time.
type stream struct {
	res *http.Response
	br  *bufio.Reader
}

func (s *stream) next(t *testing.T) (sse, bool) {
	t.Helper()
	var ev sse
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return sse{}, false
			}
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.Name != "":
			return ev, true
		case strings.HasPrefix(line, "id: "):
			ev.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func (s *stream) rest(t *testing.T) []sse {
	t.Helper()
	var evs []sse
	for {
		ev, ok := s.next(t)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

func (r *rig) post(t *testing.T, ctx context.Context, body string) *stream {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+"/api/agents/main/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("chat: %s: %s", res.Status, b)
	}
	return &stream{res: res, br: bufio.NewReader(res.Body)}
}

// get asks for a turn; lastID is sent as Last-Event-ID when not empty.
func (r *rig) get(t *testing.T, ctx context.Context, agent, turn, lastID, accept string) (*http.Response, *stream) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.URL+"/api/agents/"+agent+"/chat/turns/"+turn, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res, &stream{res: res, br: bufio.NewReader(res.Body)}
}

func (r *rig) inbound(t *testing.T, i int) channels.Inbound {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ins) <= i {
		t.Fatalf("%d messages handled, want message %d", len(r.ins), i+1)
	}
	return r.ins[i]
}

// replyTo is the dispatcher's Outbound for in.
func replyTo(in channels.Inbound, text string) channels.Outbound {
	return channels.Outbound{Address: in.Address, ReplyToID: in.MessageID, Text: text, SessionID: "s-1"}
}

func texts(evs []sse) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Name == "delta" {
			b.WriteString(strings.TrimSuffix(strings.TrimPrefix(ev.Data, `{"text":"`), `"}`))
		}
	}
	return b.String()
}

func names(evs []sse) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return out
}

// A client whose stream drops mid-reply reconnects with Last-Event-ID and
// gets exactly what it missed, then the rest live: the two streams
// together show the reply once.
func TestResumeAfterDropGetsExactlyTheRest(t *testing.T) {
	r := newRig(t, nil)
	ctx, drop := context.WithCancel(context.Background())
	first := r.post(t, ctx, `{"message":"hi"}`)
	turn := first.res.Header.Get("X-Turn-Id")
	opening, _ := first.next(t)
	if opening.Name != "turn" || opening.ID != turn+"/0" || !strings.Contains(opening.Data, turn) {
		t.Fatalf("opening event %+v, want turn %s with id %s/0", opening, turn, turn)
	}
	in := r.inbound(t, 0)
	if turn != in.ChatID+"."+in.MessageID {
		t.Fatalf("turn id %q, want conversation.message %s.%s", turn, in.ChatID, in.MessageID)
	}
	out := replyTo(in, "")
	r.a.Delta(ctx, out, "one ")
	r.a.Tool(ctx, out, "web_fetch", []byte(`{"url":"x"}`))
	r.a.Delta(ctx, out, "two ")
	var seen []sse
	for range 3 {
		ev, _ := first.next(t)
		seen = append(seen, ev)
	}
	last := seen[len(seen)-1].ID
	if last != turn+"/3" {
		t.Fatalf("third event id %q, want %s/3", last, turn)
	}
	drop()
	first.res.Body.Close()

	// The turn goes on while nobody listens.
	r.a.Delta(context.Background(), out, "three ")
	r.a.Delta(context.Background(), out, "four ")

	res, again := r.get(t, context.Background(), "main", turn, last, "text/event-stream")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("resume: %s", res.Status)
	}
	var resumed []sse
	for range 2 {
		ev, _ := again.next(t)
		resumed = append(resumed, ev)
	}
	r.a.Delta(context.Background(), out, "five")
	if err := r.a.Send(context.Background(), replyTo(in, "one two three four five")); err != nil {
		t.Fatal(err)
	}
	resumed = append(resumed, again.rest(t)...)

	if got, want := texts(seen)+texts(resumed), "one two three four five"; got != want {
		t.Errorf("text over both streams %q, want %q (each piece once)", got, want)
	}
	if got, want := strings.Join(names(resumed), " "), "delta delta delta done"; got != want {
		t.Errorf("resumed events %q, want %q (the tool call was seen before the drop)", got, want)
	}
	for i, ev := range resumed[:3] {
		if want := eventID(turnIDOf(t, turn), 4+i); ev.ID != want {
			t.Errorf("resumed event %d id %q, want %q", i, ev.ID, want)
		}
	}
	if d := resumed[len(resumed)-1]; d.ID != turn+"/done" || !strings.Contains(d.Data, `"sessionId":"s-1"`) {
		t.Errorf("final event %+v, want id %s/done with the session", d, turn)
	}

	// After the final event there is nothing more.
	res, _ = r.get(t, context.Background(), "main", turn, turn+"/done", "text/event-stream")
	if res.StatusCode != http.StatusNoContent {
		t.Errorf("resume after done: %s, want 204", res.Status)
	}
	// From the start: the whole stream again, for a page that lost it all.
	_, all := r.get(t, context.Background(), "main", turn, "", "text/event-stream")
	evs := all.rest(t)
	if got, want := strings.Join(names(evs), " "), "turn delta tool delta delta delta delta done"; got != want {
		t.Errorf("whole stream %q, want %q", got, want)
	}
}

func turnIDOf(t *testing.T, s string) turnID {
	t.Helper()
	id, err := parseTurnID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A reply that was not streamed (a notice, a turn without deltas) is one
// delta event; a reconnect after it gets only the end.
func TestResumeAfterUnstreamedReply(t *testing.T) {
	r := newRig(t, nil)
	first := r.post(t, context.Background(), `{"message":"hi"}`)
	turn := first.res.Header.Get("X-Turn-Id")
	first.next(t)
	in := r.inbound(t, 0)
	if err := r.a.Send(context.Background(), replyTo(in, "whole")); err != nil {
		t.Fatal(err)
	}
	evs := first.rest(t)
	if got := strings.Join(names(evs), " "); got != "delta done" || texts(evs) != "whole" {
		t.Fatalf("events %q text %q, want one delta with the reply, then done", got, texts(evs))
	}
	_, again := r.get(t, context.Background(), "main", turn, evs[0].ID, "text/event-stream")
	if got := strings.Join(names(again.rest(t)), " "); got != "done" {
		t.Errorf("after the reply's delta: %q, want done only", got)
	}
}

// A turn this process did not stream (a restart) is answered whole from
// durable state: one reply event that replaces what the client showed.
func TestResumeFromDurableState(t *testing.T) {
	peer, msg := uuid.NewString(), uuid.NewString()
	var asked channels.Inbound
	var mu sync.Mutex
	status := channels.TurnPending
	r := newRig(t, func(ctx context.Context, in channels.Inbound) (channels.TurnState, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = in
		if in.ChatID != peer || in.MessageID != msg {
			return channels.TurnState{}, nil
		}
		return channels.TurnState{Status: status, Text: "the answer", SessionID: "s-9", TokenEstimate: 12}, nil
	})
	turn := peer + "." + msg

	// Pending: the stream waits; the reply sent by this process (the turn
	// run again after the restart) ends it.
	res, s := r.get(t, context.Background(), "main", turn, turn+"/7", "text/event-stream")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pending turn: %s", res.Status)
	}
	for r.a.logOf(msg) == nil {
		time.Sleep(time.Millisecond)
	}
	in := inboundOf("main", turnIDOf(t, turn))
	r.a.Delta(context.Background(), replyTo(in, ""), "a rerun's words ")
	if err := r.a.Send(context.Background(), replyTo(in, "rerun answer")); err != nil {
		t.Fatal(err)
	}
	evs := s.rest(t)
	if len(evs) != 2 || evs[0].Name != "reply" || evs[0].ID != turn+"/reply" ||
		evs[0].Data != `{"replace":true,"text":"rerun answer"}` || evs[1].ID != turn+"/done" {
		t.Errorf("pending then sent: %+v, want the reply whole (replace) and done", evs)
	}
	mu.Lock()
	if asked.Agent != "main" || asked.Channel != Name || asked.ChatID != peer || asked.MessageID != msg || asked.SenderID != peer {
		t.Errorf("durable lookup asked for %+v", asked)
	}
	mu.Unlock()

	// Answered, from the transcript alone (no log in this process).
	r.a.dropLog(r.a.logOf(msg))
	mu.Lock()
	status = channels.TurnAnswered
	mu.Unlock()
	_, s = r.get(t, context.Background(), "main", turn, turn+"/3", "text/event-stream")
	evs = s.rest(t)
	if len(evs) != 2 || evs[0].Data != `{"replace":true,"text":"the answer"}` ||
		evs[1].Data != `{"sessionId":"s-9","tokenEstimate":12}` {
		t.Errorf("answered: %+v", evs)
	}
	_, s = r.get(t, context.Background(), "main", turn, turn+"/reply", "text/event-stream")
	if evs := s.rest(t); len(evs) != 1 || evs[0].Name != "done" {
		t.Errorf("after the reply event: %+v, want done only", evs)
	}
	res, s = r.get(t, context.Background(), "main", turn, "", "application/json")
	body, _ := io.ReadAll(s.br)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"answered","text":"the answer","sessionId":"s-9"`) {
		t.Errorf("JSON: %s %s", res.Status, body)
	}
}

// Bad ids are 400s naming what is wrong; unknown turns are 404s; a guessed
// conversation with a real message id neither reads nor displaces the turn.
func TestResumeRefusesBadAndUnknownIDs(t *testing.T) {
	r := newRig(t, func(ctx context.Context, in channels.Inbound) (channels.TurnState, error) {
		return channels.TurnState{}, nil // durable state knows no turn
	})
	first := r.post(t, context.Background(), `{"message":"hi"}`)
	turn := first.res.Header.Get("X-Turn-Id")
	first.next(t)
	in := r.inbound(t, 0)
	other := uuid.NewString() + "." + in.MessageID
	cases := []struct {
		name, agent, turn, last string
		code                    int
		says                    string
	}{
		{"not a turn id", "main", "abc", "", 400, "two UUIDs joined by a dot"},
		{"bad conversation", "main", "x." + in.MessageID, "", 400, `conversation \"x\" is not a lower-case UUID`},
		{"upper-case message", "main", in.ChatID + "." + strings.ToUpper(in.MessageID), "", 400, "is not a lower-case UUID"},
		{"id of another turn", "main", turn, other + "/1", 400, "names another turn"},
		{"not a number", "main", turn, turn + "/x", 400, `event \"x\" is not a number`},
		{"past the end", "main", turn, turn + "/9", 400, "has sent 0 events so far, not 9"},
		{"unknown turn", "main", uuid.NewString() + "." + uuid.NewString(), "", 404, "not found for agent main"},
		{"guessed conversation", "main", other, "", 404, "not found"},
		{"another agent", "ops", turn, "", 404, "not found for agent ops"},
	}
	for _, c := range cases {
		for _, accept := range []string{"text/event-stream", "application/json"} {
			res, s := r.get(t, context.Background(), c.agent, c.turn, c.last, accept)
			body, _ := io.ReadAll(s.br)
			if accept == "application/json" && c.last != "" {
				continue // Last-Event-ID is checked for both; the table covers it once
			}
			if res.StatusCode != c.code || !strings.Contains(string(body), c.says) {
				t.Errorf("%s (%s): %s %s, want %d saying %q", c.name, accept, res.Status, body, c.code, c.says)
			}
		}
	}
	// The real turn is still served to its client.
	if err := r.a.Send(context.Background(), replyTo(in, "fine")); err != nil {
		t.Fatal(err)
	}
	if evs := first.rest(t); texts(evs) != "fine" {
		t.Errorf("the turn after the guesses: %+v", evs)
	}
	_, s := r.get(t, context.Background(), "main", turn, turn+"/0", "text/event-stream")
	if evs := s.rest(t); texts(evs) != "fine" {
		t.Errorf("resume after the guesses: %+v", evs)
	}
}
