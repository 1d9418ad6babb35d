package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// model is a scripted llm.Provider: it answers "re: <user texts since the
// last assistant message, one per line>", or what reply returns.
type model struct {
	mu      sync.Mutex
	calls   []llm.Request
	reply   func(req llm.Request) (string, error)
	block   chan struct{} // when set, Stream waits for it (or ctx)
	started chan struct{} // when set, receives once per call
}

func (m *model) Name() string { return "fake" }

func (m *model) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	m.mu.Lock()
	m.calls = append(m.calls, req)
	reply, block, started := m.reply, m.block, m.started
	m.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return sessions.Message{}, ctx.Err()
		}
	}
	text := "re: " + strings.Join(lastUserTexts(req.Messages), " + ")
	if reply != nil {
		var err error
		if text, err = reply(req); err != nil {
			return sessions.Message{}, err
		}
	}
	if fn != nil {
		fn(llm.Event{TextDelta: text})
	}
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: text}},
		StopReason: llm.StopEnd, Usage: &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}}, nil
}

func (m *model) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.calls...)
}

// lastUserTexts are the texts of the user messages after the last
// assistant message.
func lastUserTexts(msgs []sessions.Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != sessions.RoleAssistant; i-- {
		if msgs[i].Role == sessions.RoleUser {
			out = append([]string{msgs[i].Text()}, out...)
		}
	}
	return out
}

// sent is one chunk a fake adapter delivered.
type sent struct {
	Out   channels.Outbound
	Index int
	Text  string
}

// chat is a fake chunking adapter ("tg"): chunks are the text's "§"-separated
// parts; failSend makes SendChunk fail.
type chat struct {
	name     string
	mu       sync.Mutex
	got      []sent
	failSend func(out channels.Outbound, i int) error
	// waitSend, if set, is called before failSend without the lock held
	// (it may block, as an adapter waiting out a rate limit does).
	waitSend func(ctx context.Context, out channels.Outbound, i int) error
}

func (c *chat) Name() string      { return c.name }
func (c *chat) AccountID() string { return "default" }
func (c *chat) Run(ctx context.Context, h channels.Handler) error {
	<-ctx.Done()
	return nil
}
func (c *chat) Send(ctx context.Context, out channels.Outbound) error {
	for i, ch := range c.Chunks(out) {
		if err := c.SendChunk(ctx, out, i, ch); err != nil {
			return err
		}
	}
	return nil
}
func (c *chat) Chunks(out channels.Outbound) []string {
	if strings.TrimSpace(out.Text) == "" {
		return nil
	}
	return strings.Split(out.Text, "§")
}
func (c *chat) SendChunk(ctx context.Context, out channels.Outbound, i int, chunk string) error {
	if c.waitSend != nil {
		if err := c.waitSend(ctx, out, i); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failSend != nil {
		if err := c.failSend(out, i); err != nil {
			return err
		}
	}
	c.got = append(c.got, sent{Out: out, Index: i, Text: chunk})
	return nil
}

func (c *chat) sent() []sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sent(nil), c.got...)
}

// texts are the delivered chunks' texts.
func (c *chat) texts() []string {
	var out []string
	for _, s := range c.sent() {
		out = append(out, s.Text)
	}
	return out
}

// harness is a Dispatcher on a temp state dir with a scripted model.
type harness struct {
	t     *testing.T
	dir   string
	m     *model
	mgr   *filestore.Manager
	d     *Dispatcher
	tg    *chat
	queue QueueConfig
	open  func(path string) (filestore.JournalFile, error) // journal file layer; nil: the file
	grace time.Duration                                    // shutdown grace in close (default 5 s)
	wrap  func(sessions.Backend) sessions.Backend          // wraps the backend the dispatcher and runner see; nil: none
	agent func(*agents.Options)                            // changes the runner's options; nil: none
	disp  func(*Options)                                   // changes the dispatcher's options; nil: none
	store func(*filestore.Options)                         // changes the store's options; nil: none
	reset sessions.ResetConfig                             // the runtime's reset policies
	ctx   context.Context
	stop  context.CancelFunc
}

type harnessOpt func(*harness)

func withQueue(q QueueConfig) harnessOpt { return func(h *harness) { h.queue = q } }

func newHarness(t *testing.T, dir string, m *model, opts ...harnessOpt) *harness {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if m == nil {
		m = &model{}
	}
	h := &harness{t: t, dir: dir, m: m, tg: &chat{name: "tg"},
		queue: QueueConfig{Mode: lanes.Followup, Cap: 20, Drop: lanes.DropSummarize}}
	for _, o := range opts {
		o(h)
	}
	h.start()
	t.Cleanup(h.close)
	return h
}

func (h *harness) start() {
	t := h.t
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	fopts := filestore.Options{StateDir: h.dir, CacheTTL: -1, Logger: log, JournalOpen: h.open}
	if h.store != nil {
		h.store(&fopts)
	}
	mgr, err := filestore.Open(fopts)
	if err != nil {
		t.Fatal(err)
	}
	backend := mgr.Backend()
	if h.wrap != nil {
		backend = h.wrap(backend)
	}
	ropts := agents.Options{
		Sessions: backend, Providers: map[string]llm.Provider{"fake": h.m},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}, Logger: log,
	}
	if h.agent != nil {
		h.agent(&ropts)
	}
	runner, err := agents.NewRunner(ropts)
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dopts := Options{Sessions: backend, StateDir: mgr.StateDir(), Runner: runner, Logger: log}
	if h.disp != nil {
		h.disp(&dopts)
	}
	d, err := New(dopts, &Runtime{Resolver: resolver, Queue: h.queue, Reset: h.reset})
	if err != nil {
		t.Fatal(err)
	}
	d.Register(h.tg)
	h.mgr, h.d = mgr, d
	h.ctx, h.stop = context.WithCancel(context.Background())
}

// close shuts the dispatcher down and closes the store (a clean stop).
func (h *harness) close() {
	if h.d == nil {
		return
	}
	grace := h.grace
	if grace == 0 {
		grace = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	h.d.Shutdown(ctx)
	h.stop()
	if err := h.mgr.Close(); err != nil {
		h.t.Errorf("close sessions: %v", err)
	}
	h.d = nil
}

// restart stops cleanly and starts a new Dispatcher on the same state dir
// (the adapter keeps its record of what was delivered).
func (h *harness) restart() {
	h.close()
	h.start()
}

func (h *harness) journal() *filestore.Journal { return h.mgr.Journal() }

var msgSeq struct {
	sync.Mutex
	n int
}

// in builds an inbound DM from sender in chat.
func in(channel, chat, text string) channels.Inbound {
	msgSeq.Lock()
	msgSeq.n++
	id := fmt.Sprint(msgSeq.n)
	msgSeq.Unlock()
	return channels.Inbound{Address: channels.Address{Channel: channel, AccountID: "default", ChatID: chat}, MessageID: id,
		ChatType: channels.Direct, SenderID: chat, SenderName: "u" + chat, Mentioned: true, Text: text, Time: time.Now()}
}

func (h *harness) handle(msg channels.Inbound) {
	h.t.Helper()
	if err := h.d.Handle(h.ctx, msg); err != nil {
		h.t.Fatalf("Handle(%q): %v", msg.Text, err)
	}
}

// eventually polls cond until it holds or 30 s pass (a loaded 2-core CI
// machine runs other packages' tests beside this one).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drained waits until the journal holds no pending record and no reply.
func (h *harness) drained() {
	h.t.Helper()
	eventually(h.t, "the journal to drain", func() bool {
		st := h.journal().Stats()
		return st.Pending == 0 && st.Replies == 0
	})
}

// assistantReplies counts the assistant messages of key's transcript.
func (h *harness) history(key string) []sessions.Message {
	h.t.Helper()
	k, err := routing.Parse(key)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := h.mgr.Store(k.Agent)
	if err != nil {
		h.t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		h.t.Fatalf("no session %s: %v", key, err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		h.t.Fatal(err)
	}
	msgs, err := tr.History(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs
}

func countRole(msgs []sessions.Message, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}

var errBoom = errors.New("boom")

// acceptOnly journals msg as Handle does without queueing it (the state a
// crash leaves between the journal write and the run).
func acceptOnly(t *testing.T, h *harness, msg channels.Inbound) *work {
	t.Helper()
	route, err := h.d.Route(msg)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(envelope{Inbound: &msg})
	if err != nil {
		t.Fatal(err)
	}
	w := &work{RecordID: RecordID(msg), AgentID: route.AgentID, Key: route.Key, chatMessage: chatMessage{In: msg}}
	if _, err := h.journal().Accept(h.ctx, sessions.Record{ID: w.RecordID, AgentID: w.AgentID,
		SessionKey: w.Key.String(), Payload: payload, AcceptedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return w
}
