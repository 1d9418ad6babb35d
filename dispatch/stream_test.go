package dispatch

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// stepModel is a provider that calls the sessions_list tool tools times,
// pausing before each answer, then streams answer in pieces (pausing
// between them).
type stepModel struct {
	tools  int
	pause  time.Duration
	answer []string
	mu     sync.Mutex
	calls  int
}

func (m *stepModel) Name() string { return "fake" }

func (m *stepModel) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	m.mu.Lock()
	n := m.calls
	m.calls++
	m.mu.Unlock()
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.pause):
			return nil
		}
	}
	if err := wait(); err != nil {
		return sessions.Message{}, err
	}
	if n < m.tools {
		return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopToolUse,
			Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: "c" + strconv.Itoa(n), Name: "sessions_list", Arguments: json.RawMessage(`{}`)}},
			Usage:   &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}}, nil
	}
	for i, piece := range m.answer {
		if i > 0 {
			if err := wait(); err != nil {
				return sessions.Message{}, err
			}
		}
		fn(llm.Event{TextDelta: piece})
	}
	return sessions.Message{Role: sessions.RoleAssistant, StopReason: llm.StopEnd,
		Content: []sessions.Content{{Type: sessions.BlockText, Text: strings.Join(m.answer, "")}},
		Usage:   &sessions.Usage{Input: 1, Output: 1, TotalTokens: 2}}, nil
}

// streamHarness is a harness with a real Telegram adapter on a fake Bot
// API, every room streaming in mode.
func streamHarness(t *testing.T, p llm.Provider, mode string) (*harness, *telegramtest.Server) {
	t.Helper()
	tg := telegramtest.Start(t, telegramtest.Options{})
	h := newHarness(t, "", nil)
	useProvider(t, h, p)
	useTelegram(t, h, tg, mode)
	return h, tg
}

// useProvider makes h's turns use provider p (the harness's scripted model
// does not call tools or stream in pieces).
func useProvider(t *testing.T, h *harness, p llm.Provider) {
	t.Helper()
	r, err := agents.NewRunner(agents.Options{
		Sessions: h.mgr.Backend(), Providers: map[string]llm.Provider{"fake": p},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.d.opts.Runner = r
}

func useTelegram(t *testing.T, h *harness, tg *telegramtest.Server, mode string) {
	t.Helper()
	a, err := telegram.New("default", telegram.Config{Token: tg.Token(), APIRoot: tg.URL},
		telegram.Options{HTTPClient: tg.Client(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	rt := *h.d.Runtime()
	rt.Room = func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.Streaming = mode
		return r
	}
	h.d.SetRuntime(&rt)
}

// TestProgressOneStatusEditedOneFinal: in progress mode a turn with seven
// tool calls (3.2 s) shows one status message, edited (never twice within a
// second of the chat's previous edit or the post) to name the tools, then
// the answer arrives as a new message and the status is deleted.
func TestProgressOneStatusEditedOneFinal(t *testing.T) {
	m := &stepModel{tools: 7, pause: 400 * time.Millisecond, answer: []string{"the ", "answer"}}
	h, tg := streamHarness(t, m, channels.StreamProgress)
	h.handle(in("telegram", "111", "look around"))
	h.drained()
	if _, err := tg.WaitDeleted(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	var posts []telegramtest.Sent
	for _, s := range tg.Sent() {
		if s.Method == "sendMessage" {
			posts = append(posts, s)
		}
	}
	isStatus := func(t string) bool {
		return t == "Using sessions_list…" || strings.HasPrefix(t, statusThinking)
	}
	if len(posts) != 2 || !isStatus(posts[0].Text) || posts[1].Text != "the answer" {
		t.Fatalf("messages posted = %+v, want the status then the answer", posts)
	}
	if posts[0].ReplyTo != 0 || posts[1].ReplyTo == 0 {
		t.Errorf("reply threading %d, %d: want the answer, not the status, to quote the message", posts[0].ReplyTo, posts[1].ReplyTo)
	}
	status := posts[0].MessageID
	edits := tg.Edits(111, status)
	if len(edits) == 0 {
		t.Fatal("the status was never edited")
	}
	postedAt := tg.CallTimes("sendMessage")[0]
	for k, e := range edits {
		// The chat's edits are booked a second apart from the post on:
		// edit k (from 1) cannot have arrived before postedAt + k s.
		if min := postedAt.Add(time.Duration(k+1) * editEvery); e.At.Before(min) {
			t.Errorf("edit %d at +%v: more than one edit per second", k+1, e.At.Sub(postedAt))
		}
		if !isStatus(e.Text) {
			t.Errorf("edit %d = %q", k+1, e.Text)
		}
	}
	if !strings.Contains(joinTexts(edits), "used sessions_list") {
		t.Errorf("no edit named the tool: %q", joinTexts(edits))
	}
	if del := tg.Deletions(); len(del) != 1 || del[0].MessageID != status {
		t.Errorf("deletions = %+v, want the status message", del)
	}
	if vis := tg.Visible(111); len(vis) != 1 || vis[0].Text != "the answer" || vis[0].ReplyTo == 0 {
		t.Errorf("the chat shows %+v, want only the answer, as a reply", vis)
	}
	if d, _ := h.journal().Drafts(); len(d) != 0 {
		t.Errorf("draft records left: %+v", d)
	}
}

// TestProgressQuickAnswerShowsNoStatus: a turn answered before
// progressDelay posts no status message: the chat sees only the answer.
func TestProgressQuickAnswerShowsNoStatus(t *testing.T) {
	h, tg := streamHarness(t, &stepModel{answer: []string{"quick"}}, channels.StreamProgress)
	h.handle(in("telegram", "111", "hi"))
	h.drained()
	if sent := tg.Sent(); len(sent) != 1 || sent[0].Text != "quick" || len(tg.Deletions()) != 0 {
		t.Fatalf("sent %+v, deleted %+v: want only the answer", sent, tg.Deletions())
	}
}

func joinTexts(es []telegramtest.Edit) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Text + "|")
	}
	return b.String()
}

// TestPartialDraftEndsAsTheAnswer: in partial mode the answer is posted at
// its first text and edited as it streams; the final reply edits the draft
// into its first chunk and sends the second as a new message, so the chat
// shows the answer once. An edit answered 429 is retried no earlier than
// its retry_after, with the latest text.
func TestPartialDraftEndsAsTheAnswer(t *testing.T) {
	m := &stepModel{tools: 1, pause: 400 * time.Millisecond,
		answer: []string{"Hello", " there,", " this", " is", " a", " long", " answer\n\n", strings.Repeat("word ", 819), "\n\ntail"}}
	h, tg := streamHarness(t, m, channels.StreamPartial)
	tg.FailNext("editMessageText", telegramtest.Failure{Code: 429, RetryAfter: 1})
	h.handle(in("telegram", "111", "write"))
	h.drained()
	final := strings.Join(m.answer, "")
	chunks := channels.SplitMarkdown(final, telegram.MaxMessageLength)
	vis := tg.Visible(111)
	if len(vis) != 2 || len(chunks) != 2 {
		t.Fatalf("the chat shows %d messages (%d chunks), want 2", len(vis), len(chunks))
	}
	draft := vis[0].MessageID
	if vis[0].Text != chunks[0] || vis[1].Text != chunks[1] {
		t.Errorf("the chat shows %q… / %q, want the answer's two chunks", vis[0].Text[:20], vis[1].Text)
	}
	if vis[0].ReplyTo == 0 || vis[1].ReplyTo != 0 {
		t.Errorf("reply threading %d, %d: want the draft (chunk 0) to quote the message", vis[0].ReplyTo, vis[1].ReplyTo)
	}
	posts := 0
	for _, s := range tg.Sent() {
		if s.Method == "sendMessage" {
			posts++
			if strings.Contains(s.Text, "tail") && s.MessageID != vis[1].MessageID {
				t.Errorf("the end of the answer was posted twice")
			}
		}
	}
	if posts != 2 {
		t.Errorf("%d messages posted, want the draft and the second chunk", posts)
	}
	edits := tg.Edits(111, draft)
	if len(edits) < 2 {
		t.Fatalf("draft edited %d times, want it to follow the stream", len(edits))
	}
	for _, e := range edits[:len(edits)-1] {
		if strings.Contains(e.Text, "tail") {
			t.Errorf("an early edit showed text of the second chunk")
		}
	}
	calls := tg.CallTimes("editMessageText")
	if len(calls) != len(edits)+1 {
		t.Fatalf("%d editMessageText calls, %d recorded edits: want one 429 more", len(calls), len(edits))
	}
	// The 429 was the first call; the next edit came a retry_after later.
	if gap := edits[0].At.Sub(calls[0]); gap < time.Second {
		t.Errorf("edit %v after a 429 with retry_after 1 s", gap)
	}
	if d, _ := h.journal().Drafts(); len(d) != 0 {
		t.Errorf("draft records left: %+v", d)
	}
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Deletions()); n != 0 {
		t.Errorf("a restart deleted %d messages of a finished answer", n)
	}
}

// TestDraftsLeftByACrashAreCleared: drafts recorded by a process that died
// mid-turn are deleted at the next start, or edited to say the answer
// follows when the platform refuses the delete; their records go either way.
func TestDraftsLeftByACrashAreCleared(t *testing.T) {
	h, tg := streamHarness(t, &stepModel{answer: []string{"x"}}, channels.StreamPartial)
	a := h.d.adapter("telegram", "default").(channels.Drafter)
	var ids []string
	for _, chat := range []string{"111", "222"} {
		out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: chat}}
		id, err := a.SendDraft(h.ctx, out, "half an ans")
		if err != nil {
			t.Fatal(err)
		}
		out.Draft = id
		target, _ := json.Marshal(out)
		if err := h.journal().Draft(sessions.Draft{ID: draftRecord(out), Target: target, MessageID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	h.restart() // the records are what a crash leaves: a clean stop keeps them too
	useTelegram(t, h, tg, channels.StreamPartial)
	tg.FailNext("deleteMessage", telegramtest.Failure{Code: 400, Description: "Bad Request: message can't be deleted for everyone"})
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	if vis := tg.Visible(111); len(vis) != 1 || vis[0].Text != statusFollows {
		t.Errorf("chat 111 shows %+v, want the draft edited to %q", vis, statusFollows)
	}
	if vis := tg.Visible(222); len(vis) != 0 {
		t.Errorf("chat 222 shows %+v, want the draft deleted", vis)
	}
	if d, _ := h.journal().Drafts(); len(d) != 0 {
		t.Errorf("draft records left: %+v", d)
	}
	h.restart()
	if d, _ := h.journal().Drafts(); len(d) != 0 {
		t.Errorf("draft records back after a restart: %+v", d)
	}
}

// TestPartialReplyResumedEditsTheDraft: a crash after a partial turn's
// reply was stored (its first chunk replaces the draft), before or after
// that edit reached Telegram: the restart edits the draft (again) and
// sends only the chunks not marked; the draft is not deleted as a leftover
// and nothing shows twice.
func TestPartialReplyResumedEditsTheDraft(t *testing.T) {
	for _, edited := range []bool{false, true} {
		h, tg := streamHarness(t, &stepModel{answer: []string{"x"}}, channels.StreamPartial)
		a := h.d.adapter("telegram", "default").(channels.Drafter)
		w := acceptOnly(t, h, in("telegram", "111", "question"))
		out := outboundFor(w.In)
		id, err := a.SendDraft(h.ctx, out, "the first half of")
		if err != nil {
			t.Fatal(err)
		}
		out.Draft = id
		target, _ := json.Marshal(out)
		if err := h.journal().Draft(sessions.Draft{ID: draftRecord(out), Target: target, MessageID: id}); err != nil {
			t.Fatal(err)
		}
		chunks := []string{"the first half of the answer", "and the second"}
		appendTurn(t, h, w, strings.Join(chunks, "\n\n"))
		if err := h.journal().Ready(sessions.Reply{ID: "r1", Records: []string{w.RecordID}, AgentID: w.AgentID,
			SessionKey: w.Key.String(), Target: target, Chunks: chunks, Draft: draftRecord(out)}); err != nil {
			t.Fatal(err)
		}
		if edited {
			if err := a.EditDraft(h.ctx, out, id, chunks[0]); err != nil {
				t.Fatal(err)
			}
		}
		h.restart()
		useTelegram(t, h, tg, channels.StreamPartial)
		if _, err := h.d.Resume(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.drained()
		vis := tg.Visible(111)
		if len(vis) != 2 || vis[0].Text != chunks[0] || vis[1].Text != chunks[1] || len(tg.Deletions()) != 0 {
			t.Errorf("edited=%v: the chat shows %+v (deleted %+v), want the two chunks once", edited, vis, tg.Deletions())
		}
		if d, _ := h.journal().Drafts(); len(d) != 0 {
			t.Errorf("edited=%v: draft records left: %+v", edited, d)
		}
	}
}
