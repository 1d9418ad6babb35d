package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// memStore is an in-memory store with the sessions package's semantics
// that matter to the runner (context rebuilt from the latest compaction).
type memStore struct {
	mu          sync.Mutex
	entries     map[string]sessions.Entry
	transcripts map[string]*memTranscript
	archived    []string // session ids of deleted entries
	n           int
}

func newMemStore() *memStore {
	return &memStore{entries: map[string]sessions.Entry{}, transcripts: map[string]*memTranscript{}}
}

func (m *memStore) Get(key routing.Key) (sessions.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key.String()]
	return e, ok, nil
}

func (m *memStore) List() ([]sessions.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sessions.Entry
	for _, e := range m.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

func (m *memStore) Begin(_ context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key.String()]; ok {
		return e, sessions.BeginInfo{}, nil
	}
	m.n++
	e := sessions.Entry{SessionKey: key.String(), SessionID: fmt.Sprintf("sess-%d", m.n), CreatedAt: o.At, UpdatedAt: o.At.Add(time.Duration(m.n)),
		ParentSessionKey: o.ParentKey, Title: o.Title}
	m.entries[key.String()] = e
	m.transcripts[e.SessionID] = &memTranscript{}
	return e, sessions.BeginInfo{Created: true}, nil
}

func (m *memStore) Patch(_ context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key.String()]
	if !ok {
		return e, sessions.ErrNotFound
	}
	if err := fn(&e); err != nil {
		return e, err
	}
	m.entries[key.String()] = e
	return e, nil
}

func (m *memStore) AddCounters(key routing.Key, c sessions.Counters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key.String()]
	if !ok {
		return
	}
	e.InputTokens += c.InputTokens
	e.OutputTokens += c.OutputTokens
	e.TotalTokens += c.TotalTokens
	if c.ContextTokens != 0 {
		e.ContextTokens = c.ContextTokens
	}
	e.MessageCount += c.Messages
	if c.Model != "" {
		e.Model, e.Provider = c.Model, c.Provider
	}
	m.entries[key.String()] = e
}

func (m *memStore) Delete(_ context.Context, key routing.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key.String()]
	if !ok {
		return sessions.ErrNotFound
	}
	delete(m.entries, key.String())
	m.archived = append(m.archived, e.SessionID)
	return nil
}

func (m *memStore) transcript(e sessions.Entry) (transcript, error) {
	id := e.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.transcripts[id]
	if !ok {
		return nil, sessions.ErrNotFound
	}
	return t, nil
}

type memLine struct {
	id   string
	msg  *sessions.Message
	comp *sessions.Compaction
}

type memTranscript struct {
	mu    sync.Mutex
	lines []memLine
}

func (t *memTranscript) AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	return t.Append(sessions.WithReplyAhead(ctx, nil), msgs...) // a lazy append stores no reply
}

// Append appends msgs; a sessions.ReplyAhead in ctx (one message) is
// taken with it, as a backend storing the reply in the append's
// transaction does.
func (t *memTranscript) Append(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for _, m := range msgs {
		m := m
		id := fmt.Sprintf("%08x", len(t.lines)+1)
		t.lines = append(t.lines, memLine{id: id, msg: &m})
		ids = append(ids, id)
	}
	if ra := sessions.ReplyAheadFrom(ctx); ra != nil && len(ids) == 1 {
		rp, _ := ra.Build(ids[0])
		ra.Take(rp)
	}
	return ids, nil
}

func (t *memTranscript) AppendCompaction(_ context.Context, c sessions.Compaction) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := fmt.Sprintf("%08x", len(t.lines)+1)
	t.lines = append(t.lines, memLine{id: id, comp: &c})
	return id, nil
}

func (t *memTranscript) Context(context.Context) (sessions.Context, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c sessions.Context
	ci := -1
	for i := len(t.lines) - 1; i >= 0; i-- {
		if t.lines[i].comp != nil {
			ci = i
			break
		}
	}
	from := 0
	if ci >= 0 {
		comp := t.lines[ci].comp
		c.Summary = comp.Summary
		c.Messages = append(c.Messages, summaryMessage(comp.Summary))
		c.EntryIDs = append(c.EntryIDs, "")
		for i, l := range t.lines {
			if l.id == comp.FirstKeptEntryID {
				from = i
			}
		}
	}
	for i := from; i < len(t.lines); i++ {
		if l := t.lines[i]; l.msg != nil {
			c.Messages = append(c.Messages, *l.msg)
			c.EntryIDs = append(c.EntryIDs, l.id)
		}
	}
	if n := len(t.lines); n > 0 {
		c.LeafID = t.lines[n-1].id
	}
	return c, nil
}

func (t *memTranscript) History(context.Context) ([]sessions.Message, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sessions.Message
	for _, l := range t.lines {
		if l.msg != nil {
			out = append(out, *l.msg)
		}
	}
	return out, nil
}

func (t *memTranscript) compactions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.lines {
		if l.comp != nil {
			n++
		}
	}
	return n
}

// fakeProvider is a scripted llm.Provider. Summary calls (compaction) are
// answered by summary and counted apart.
type fakeProvider struct {
	name    string
	mu      sync.Mutex
	reqs    []llm.Request // non-summary requests
	sums    []llm.Request // summary requests
	reply   func(n int, req llm.Request) (sessions.Message, error)
	summary func(req llm.Request) (string, error)
}

func (p *fakeProvider) Name() string { return p.name }

func (p *fakeProvider) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	if err := ctx.Err(); err != nil {
		return sessions.Message{}, err
	}
	p.mu.Lock()
	if req.System == summarySystemPrompt {
		p.sums = append(p.sums, req)
		f := p.summary
		p.mu.Unlock()
		s := "summary of earlier turns"
		if f != nil {
			var err error
			if s, err = f(req); err != nil {
				return sessions.Message{}, err
			}
		}
		return assistantText(s), nil
	}
	n := len(p.reqs)
	p.reqs = append(p.reqs, req)
	f := p.reply
	p.mu.Unlock()
	var m sessions.Message
	var err error
	if f != nil {
		m, err = f(n, req)
	} else {
		m = assistantText("ok: " + lastUserText(req.Messages))
	}
	if err != nil {
		return m, err
	}
	if fn != nil {
		for _, w := range strings.SplitAfter(m.Text(), " ") {
			if w != "" {
				fn(llm.Event{TextDelta: w})
			}
		}
	}
	return m, nil
}

func (p *fakeProvider) requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

func (p *fakeProvider) summaryRequests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sums)
}

func assistantText(s string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: s}}}
}

func assistantCall(id, name string, args any) sessions.Message {
	b, _ := json.Marshal(args)
	return sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: id, Name: name, Arguments: b}},
		StopReason: llm.StopToolUse}
}

func lastUserText(msgs []sessions.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == sessions.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// harness is a runner over memStores with a fake provider.
type harness struct {
	t      testing.TB
	r      *Runner
	p      *fakeProvider
	stores map[string]*memStore
	mu     sync.Mutex
	disp   []Dispatch
}

func newHarness(t testing.TB, d Defaults, agentsList []Agent, dispatch func(h *harness, d Dispatch) error) *harness {
	t.Helper()
	return newHarnessWith(t, d, agentsList, dispatch, nil)
}

func newHarnessWith(t testing.TB, d Defaults, agentsList []Agent, dispatch func(h *harness, d Dispatch) error, extra map[string]llm.Provider) *harness {
	t.Helper()
	h := &harness{t: t, p: &fakeProvider{name: "fake"}, stores: map[string]*memStore{}}
	for _, a := range agentsList {
		h.stores[a.ID] = newMemStore()
	}
	if d.Model.Primary == "" {
		d.Model.Primary = "fake/model-1"
	}
	providers := map[string]llm.Provider{"fake": h.p}
	for n, p := range extra {
		providers[n] = p
	}
	opts := Options{Providers: providers, Defaults: d, Agents: agentsList,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if dispatch != nil {
		opts.Dispatch = func(_ context.Context, d Dispatch) error {
			h.mu.Lock()
			h.disp = append(h.disp, d)
			h.mu.Unlock()
			return dispatch(h, d)
		}
	}
	r, err := newRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.stores = func(id string) (store, error) {
		st, ok := h.stores[id]
		if !ok {
			return nil, fmt.Errorf("no store %q", id)
		}
		return st, nil
	}
	h.r = r
	return h
}

func (h *harness) key(agent, peer string) routing.Key {
	k, err := routing.PeerKey(agent, "telegram", "", routing.Direct, peer)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := h.stores[agent].Begin(context.Background(), k, sessions.Origin{At: time.Now()}); err != nil {
		h.t.Fatal(err)
	}
	return k
}

func (h *harness) transcript(agent string, k routing.Key) *memTranscript {
	st := h.stores[agent]
	e, ok, _ := st.Get(k)
	if !ok {
		h.t.Fatalf("no entry for %s", k)
	}
	return st.transcripts[e.SessionID]
}

func (h *harness) dispatches() []Dispatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Dispatch(nil), h.disp...)
}

// checkPaired fails when msgs hold a tool call without its result right
// after it, or a result without its call.
func checkPaired(t *testing.T, what string, msgs []sessions.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == sessions.RoleToolResult {
			t.Fatalf("%s: message %d is a tool result without its call", what, i)
		}
		calls := toolCalls(m)
		for j, c := range calls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != sessions.RoleToolResult || msgs[k].ToolCallID != c.ID {
				t.Fatalf("%s: tool call %s at %d has no result right after it", what, c.ID, i)
			}
		}
		i += len(calls)
	}
}

// fakeOpenAI starts the OpenAI-compatible fake and returns it with a
// provider "oa" on it that never retries.
func fakeOpenAI(t testing.TB) (*openaitest.Server, llm.Provider) {
	t.Helper()
	srv := openaitest.NewServer(t)
	p, err := openai.New(openai.Config{Name: "oa", Provider: llm.ProviderConfig{Type: "openai", BaseURL: srv.BaseURL(), APIKey: "k", MaxRetries: llm.Retry(-1)}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}
