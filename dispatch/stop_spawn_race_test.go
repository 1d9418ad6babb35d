package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// gatedAccept is a backend whose journal, once, holds the Accept of the
// first record match picks after writing it, until release is closed:
// the instant between a record being journaled and its work being queued
// (the journal's fsync). Its stores refuse a Delete whose context is done.
type gatedAccept struct {
	sessions.Backend
	match    func(sessions.Record) bool
	once     sync.Once
	accepted chan struct{} // closed once the matched record is written
	release  chan struct{}
	released sync.Once
}

func newGatedAccept(t *testing.T, match func(sessions.Record) bool) *gatedAccept {
	b := &gatedAccept{match: match, accepted: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(b.open)
	return b
}

// open lets the held Accept return.
func (b *gatedAccept) open() { b.released.Do(func() { close(b.release) }) }

func (b *gatedAccept) Journal() sessions.Delivery {
	return gatedJournal{Delivery: b.Backend.Journal(), b: b}
}

// Store's stores refuse a Delete whose context is done, as PostgreSQL's
// queries do.
func (b *gatedAccept) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.Backend.Store(agentID)
	if err != nil {
		return nil, err
	}
	return ctxDeleteStore{AgentStore: st}, nil
}

type ctxDeleteStore struct{ sessions.AgentStore }

func (s ctxDeleteStore) Delete(ctx context.Context, key routing.Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.AgentStore.Delete(ctx, key)
}

type gatedJournal struct {
	sessions.Delivery
	b *gatedAccept
}

func (j gatedJournal) Accept(ctx context.Context, rec sessions.Record) (bool, error) {
	dup, err := j.Delivery.Accept(ctx, rec)
	if err == nil && j.b.match(rec) {
		held := false
		j.b.once.Do(func() { held = true })
		if held {
			close(j.b.accepted)
			<-j.b.release
		}
	}
	return dup, err
}

// spawnModel answers a parent's first call with a sessions_spawn call and
// every later call with text; a subagent's call answers "child result".
type spawnModel struct {
	mu             sync.Mutex
	parent, child  int
	childRequests  []llm.Request
	parentRequests []llm.Request
}

func (m *spawnModel) Name() string { return "fake" }

func (m *spawnModel) Stream(_ context.Context, req llm.Request, _ func(llm.Event)) (sessions.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg := textMsg("parent answer")
	if strings.Contains(req.System, "You are a subagent") {
		m.child++
		m.childRequests = append(m.childRequests, req)
		msg = textMsg("child result")
	} else {
		m.parent++
		m.parentRequests = append(m.parentRequests, req)
		if m.parent == 1 {
			args, _ := json.Marshal(map[string]any{"task": "look it up"})
			msg = sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse, Content: []sessions.Content{
				{Type: sessions.BlockToolCall, ID: "call_1", Name: "sessions_spawn", Arguments: args}}}
		}
	}
	msg.Usage = &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}
	return msg, nil
}

func (m *spawnModel) calls() (parent, child int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parent, m.child
}

// announced reports whether a parent's call was shown a subagent's result.
func (m *spawnModel) announced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.parentRequests {
		for _, msg := range r.Messages {
			if strings.Contains(msg.Text(), "[subagent result]") {
				return true
			}
		}
	}
	return false
}

// TestStopDuringSpawnStopsTheChild (SPEC §4 /stop, §5): /stop arriving
// while the parent's sessions_spawn is journaling the child's task (its
// record written, not yet queued) stops that child too. It was missed:
// /stop listed the child's session, found nothing of it queued or
// running, and the spawn queued it right after — the child ran, and its
// result was announced and answered in the chat after the person had
// said stop.
func TestStopDuringSpawnStopsTheChild(t *testing.T) {
	m := &spawnModel{}
	b := newGatedAccept(t, func(rec sessions.Record) bool { return strings.Contains(rec.SessionKey, ":subagent:") })
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(inner sessions.Backend) sessions.Backend { b.Backend = inner; return b }
		h.agent = func(o *agents.Options) {
			o.Providers = map[string]llm.Provider{"fake": m}
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	h.handle(in("tg", "41", "research this in the background"))
	<-b.accepted // the child's task is journaled, not yet queued
	h.handle(in("tg", "41", "/stop"))
	b.open()
	h.drained()
	parent, child := m.calls()
	if child != 0 {
		t.Errorf("the child spawned as /stop ran went to the model %d times, want none", child)
	}
	if m.announced() || parent != 1 {
		t.Errorf("the parent was called %d times (announced: %v), want once: the spawn /stop cut short", parent, m.announced())
	}
	got := h.tg.texts()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Stopped.") {
		t.Errorf("chat got %q, want only the answer to /stop", got)
	}
	if !strings.Contains(strings.Join(got, "\n"), "1 subagent(s) stopped") {
		t.Errorf("chat got %q, want /stop to count the child it stopped", got)
	}
	pendingNone(t, h)
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if strings.Contains(e.SessionKey, ":subagent:") {
			t.Errorf("the child that never ran was left as a session: %s", e.SessionKey)
		}
	}
}

// TestStopDuringAnnouncementDropsIt (SPEC §4 /stop, §5): /stop arriving
// while a finished child's result is being journaled into its parent
// stops that announcement: it was queued on the parent's lane just after
// /stop had emptied it, and the parent answered the result in the chat
// after the person had said stop.
func TestStopDuringAnnouncementDropsIt(t *testing.T) {
	m := &spawnModel{}
	b := newGatedAccept(t, func(rec sessions.Record) bool { return strings.HasPrefix(rec.ID, announcePrefix) })
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(inner sessions.Backend) sessions.Backend { b.Backend = inner; return b }
		h.agent = func(o *agents.Options) {
			o.Providers = map[string]llm.Provider{"fake": m}
			o.Dispatch = func(ctx context.Context, a agents.Dispatch) error { return h.d.Dispatch(ctx, a) }
		}
	})
	parent := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "42"}
	m.parent = 1 // the parent's calls answer text
	h.handle(in("tg", "42", "hello"))
	h.drained()
	child := spawnedChild(t, h, parent, "3b7e1c9a-5d2f-4e8b-9a10-6c4d2e8f1b30")
	if err := h.d.Dispatch(h.ctx, agents.Dispatch{AgentID: "main", Key: child, Subagent: true,
		Message: sessions.UserText("the job", time.Now())}); err != nil {
		t.Fatal(err)
	}
	<-b.accepted // the child's result is journaled into its parent, not yet queued
	h.handle(in("tg", "42", "/stop"))
	b.open()
	h.drained()
	if m.announced() {
		t.Error("the result of a child stopped while it announced reached the parent's model")
	}
	got := h.tg.texts()
	if len(got) != 2 || !strings.HasPrefix(got[1], "Stopped.") {
		t.Errorf("chat got %q, want the answer to hello, then to /stop, and nothing after", got)
	}
	pendingNone(t, h)
}

// pendingNone fails t when the journal still holds records: a stopped
// spawn or announcement left for the next start runs then.
func pendingNone(t *testing.T, h *harness) {
	t.Helper()
	recs, err := h.journal().Pending()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		t.Errorf("record %s (%s) still pending: it runs at the next start", r.ID, r.SessionKey)
	}
}
