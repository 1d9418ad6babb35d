package dispatch

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// storeReply puts a reply to w in the outbox as deliver would, with sent
// chunks already delivered, and returns it.
func storeReply(t *testing.T, h *harness, w *work, chunks []string, sent int) sessions.Reply {
	t.Helper()
	out := outboundFor(w.In)
	out.Answers = []string{w.In.MessageID}
	target, _ := json.Marshal(out)
	rp := sessions.Reply{ID: "r-" + w.RecordID, Records: []string{w.RecordID}, AgentID: w.AgentID,
		SessionKey: w.Key.String(), Target: target, Chunks: chunks}
	if err := h.journal().Ready(rp); err != nil {
		t.Fatal(err)
	}
	if sent > 0 {
		if err := h.journal().Sent(rp.ID, sent); err != nil {
			t.Fatal(err)
		}
	}
	return rp
}

// appendTurn writes w's user message (and reply, if any) to its session's
// transcript as a turn that died would have.
func appendTurn(t *testing.T, h *harness, w *work, reply string) {
	t.Helper()
	var after []sessions.Message
	if reply != "" {
		after = append(after, sessions.Message{Role: sessions.RoleAssistant, StopReason: "stop",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: reply}}})
	}
	appendInput(t, h, w, after...)
}

// appendInput writes w's user message and then after to its session's
// transcript.
func appendInput(t *testing.T, h *harness, w *work, after ...sessions.Message) {
	t.Helper()
	st, err := h.mgr.Store(w.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(h.ctx, w.Key, sessions.Origin{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := append([]sessions.Message{h.d.userMessage(h.ctx, w, mediaTurn{})}, after...)
	if _, err := tr.Append(h.ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryOfEachOutboxState leaves each state a crash can leave, then
// restarts: nothing is lost, nothing is sent twice, the model runs only
// for the input it never answered, and each transcript holds one reply
// per input.
func TestRecoveryOfEachOutboxState(t *testing.T) {
	cases := []struct {
		name      string
		setup     func(t *testing.T, h *harness, w *work)
		want      []string // chunks delivered after the restart
		modelRuns int
	}{
		{"accepted only", func(t *testing.T, h *harness, w *work) {}, []string{"re: q"}, 1},
		{"ready, nothing sent", func(t *testing.T, h *harness, w *work) {
			appendTurn(t, h, w, "a§b§c")
			storeReply(t, h, w, []string{"a", "b", "c"}, 0)
		}, []string{"a", "b", "c"}, 0},
		{"partly sent", func(t *testing.T, h *harness, w *work) {
			appendTurn(t, h, w, "a§b§c")
			storeReply(t, h, w, []string{"a", "b", "c"}, 1)
		}, []string{"b", "c"}, 0},
		{"fully sent", func(t *testing.T, h *harness, w *work) {
			appendTurn(t, h, w, "a§b§c")
			storeReply(t, h, w, []string{"a", "b", "c"}, 3)
		}, nil, 0},
		{"consumed with the reply in the transcript", func(t *testing.T, h *harness, w *work) {
			appendTurn(t, h, w, "stored§answer")
		}, []string{"stored", "answer"}, 0},
		{"consumed without a reply", func(t *testing.T, h *harness, w *work) {
			appendTurn(t, h, w, "")
		}, []string{"re: q"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "", nil)
			msg := in("tg", "9", "q")
			w := acceptOnly(t, h, msg)
			tc.setup(t, h, w)
			h.restart()
			if _, err := h.d.Resume(h.ctx); err != nil {
				t.Fatal(err)
			}
			h.drained()
			if got := h.tg.texts(); !slices.Equal(got, tc.want) {
				t.Errorf("delivered after restart %q, want %q", got, tc.want)
			}
			if n := len(h.m.requests()); n != tc.modelRuns {
				t.Errorf("%d model calls, want %d", n, tc.modelRuns)
			}
			for _, s := range h.tg.sent() {
				if s.Out.ChatID != "9" || (s.Index == 0 && s.Out.ReplyToID != msg.MessageID) {
					t.Errorf("chunk went to %+v", s.Out)
				}
			}
			if tc.name != "fully sent" {
				hist := h.history(w.Key.String())
				if countRole(hist, sessions.RoleUser) != 1 || countRole(hist, sessions.RoleAssistant) != 1 {
					t.Errorf("transcript has %d user and %d assistant messages, want 1 and 1",
						countRole(hist, sessions.RoleUser), countRole(hist, sessions.RoleAssistant))
				}
			}
			// A second restart finds nothing left to do.
			h.restart()
			if n, err := h.d.Resume(h.ctx); err != nil || n != 0 || h.journal().Stats().Replies != 0 {
				t.Fatalf("second restart resumed %d (%v), %d replies", n, err, h.journal().Stats().Replies)
			}
		})
	}
}

// TestResumedReplyPrecedesNewWork: a reply left in the outbox is sent on
// its session's lane before messages that arrive after the restart.
func TestResumedReplyPrecedesNewWork(t *testing.T) {
	h := newHarness(t, "", nil)
	w := acceptOnly(t, h, in("tg", "10", "old"))
	appendTurn(t, h, w, "old reply")
	storeReply(t, h, w, []string{"old reply"}, 0)
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.handle(in("tg", "10", "new"))
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"old reply", "re: new"}) {
		t.Fatalf("order %q", got)
	}
}

func TestGiveUpAfterProcessDeathsWithNotice(t *testing.T) {
	h := newHarness(t, "", nil)
	msg := in("tg", "11", "cursed")
	w := acceptOnly(t, h, msg)
	for range h.d.opts.MaxDeaths {
		if err := h.journal().Start(w.RecordID); err != nil {
			t.Fatal(err)
		}
	}
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	got := h.tg.sent()
	if len(got) != 1 || !strings.HasPrefix(got[0].Text, "Sorry — I could not answer your message from ") || !got[0].Out.Failed {
		t.Fatalf("sent %+v", got)
	}
	if len(h.m.requests()) != 0 {
		t.Error("the model ran for a given-up message")
	}
	// One death fewer is replayed, not given up; an aborted turn (a clean
	// shutdown) is not a death.
	w = acceptOnly(t, h, in("tg", "11", "lucky"))
	for range h.d.opts.MaxDeaths - 1 {
		_ = h.journal().Start(w.RecordID)
	}
	_ = h.journal().Start(w.RecordID)
	_ = h.journal().Abort(w.RecordID)
	h.restart()
	if n, _ := h.d.Resume(h.ctx); n != 1 {
		t.Fatalf("resumed %d, want 1", n)
	}
	h.drained()
	if got := h.tg.texts(); len(got) != 2 || got[1] != "re: lucky" {
		t.Fatalf("sent %q", got)
	}
}

// TestDroppedMessageFinishedNotResurrected: a message dropped by the queue
// policy is finished in the journal; a restart does not answer it.
func TestDroppedMessageFinishedNotResurrected(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropOld}))
	h.handle(in("tg", "12", "first"))
	<-m.started
	h.handle(in("tg", "12", "dropped"))
	h.handle(in("tg", "12", "kept"))
	close(m.block)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: first", "re: kept"}) {
		t.Fatalf("sent %q", got)
	}
	h.restart()
	if n, _ := h.d.Resume(h.ctx); n != 0 {
		t.Fatalf("a dropped message was resumed (%d)", n)
	}
}

// TestShutdownMidTurnResumesWithoutDoubleAppend: a turn interrupted by a
// shutdown after its input was appended runs again without appending it
// twice, and it is not counted as a death.
func TestShutdownMidTurnResumesWithoutDoubleAppend(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m)
	h.grace = 50 * time.Millisecond
	msg := in("tg", "13", "slow")
	h.handle(msg)
	<-m.started
	h.close()
	m.mu.Lock()
	m.block, m.started = nil, nil
	m.mu.Unlock()
	h.start()
	recs, _ := h.journal().Pending()
	if len(recs) != 1 || recs[0].Deaths() != 0 {
		t.Fatalf("pending after shutdown %+v", recs)
	}
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: slow"}) {
		t.Fatalf("sent %q", got)
	}
	route, _ := h.d.Route(msg)
	hist := h.history(route.Key.String())
	if countRole(hist, sessions.RoleUser) != 1 || countRole(hist, sessions.RoleAssistant) != 1 {
		t.Errorf("transcript %+v", hist)
	}
}

// TestRecoveryAcrossTwoTurns: the process died after q1's turn appended
// its reply (before the outbox took it), then again after the next turn
// appended q2. After the restart both are replayed in one batch: q1 gets
// its own stored reply (never delivered before) and q2 is answered by the
// model, each once. (The crash test lost such replies: recovery saw only
// the latest turn, unanswered, and finished q1 with q2's reply.)
func TestRecoveryAcrossTwoTurns(t *testing.T) {
	h := newHarness(t, "", nil)
	m1, m2 := in("tg", "9", "q1"), in("tg", "9", "q2")
	w1, w2 := acceptOnly(t, h, m1), acceptOnly(t, h, m2)
	// Both turns started their records (so the replay joins them again,
	// as a burst that ran together would be).
	if err := h.journal().Start(w1.RecordID); err != nil {
		t.Fatal(err)
	}
	appendTurn(t, h, w1, "first answer")
	if err := h.journal().Start(w2.RecordID); err != nil {
		t.Fatal(err)
	}
	appendTurn(t, h, w2, "")
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got, want := h.tg.texts(), []string{"first answer", "re: q2"}; !slices.Equal(got, want) {
		t.Errorf("delivered after restart %q, want %q", got, want)
	}
	if n := len(h.m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (for q2 only)", n)
	}
	for _, s := range h.tg.sent() {
		want := m2.MessageID
		if s.Out.Text == "first answer" {
			want = m1.MessageID
		}
		if s.Out.ReplyToID != want {
			t.Errorf("%q answers message %q, want %q", s.Out.Text, s.Out.ReplyToID, want)
		}
	}
	hist := h.history(w1.Key.String())
	if countRole(hist, sessions.RoleUser) != 2 || countRole(hist, sessions.RoleAssistant) != 2 {
		t.Errorf("transcript has %d user and %d assistant messages, want 2 and 2",
			countRole(hist, sessions.RoleUser), countRole(hist, sessions.RoleAssistant))
	}
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 0 || h.journal().Stats().Replies != 0 {
		t.Fatalf("second restart resumed %d (%v), %d replies", n, err, h.journal().Stats().Replies)
	}
}

// TestReplayedMessageNotDroppedByCap: a turn died after appending q2 to
// the transcript; after the restart the session's replayed backlog is
// above the queue's cap. q2 is not dropped to make room: the drop's
// summary would put it before the model a second time, beside the
// transcript's copy that the next turn already answers (the Discord
// crash test: an input named by two replies).
func TestReplayedMessageNotDroppedByCap(t *testing.T) {
	h := newHarness(t, "", nil, withQueue(QueueConfig{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropSummarize}))
	m1, m2, m3 := in("tg", "14", "q1"), in("tg", "14", "q2"), in("tg", "14", "q3")
	acceptOnly(t, h, m1)
	w2 := acceptOnly(t, h, m2)
	acceptOnly(t, h, m3)
	if err := h.journal().Start(w2.RecordID); err != nil {
		t.Fatal(err)
	}
	appendTurn(t, h, w2, "")
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	for i, req := range h.m.requests() {
		for _, msg := range req.Messages {
			if text := msg.Text(); strings.Contains(text, "queue overflow") && strings.Contains(text, "q2") {
				t.Errorf("model request %d repeats q2 as dropped: %q", i+1, text)
			}
		}
	}
	hist := h.history(w2.Key.String())
	n := 0
	for _, m := range hist {
		if m.Role == sessions.RoleUser && strings.Contains(m.Text(), "q2") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("q2 is in %d user messages of the transcript, want 1", n)
	}
	if recs, _ := h.journal().Pending(); len(recs) != 0 {
		t.Errorf("%d records still pending", len(recs))
	}
}

// TestSummarizedDropSurvivesShutdown: a message the queue dropped with a
// summary is settled by the turn that carries the summary, not at the
// drop: when the daemon stops before that turn, it is pending at the next
// start and answered then. (It was finished at the drop, its summary kept
// in memory only: the crash test lost such messages.)
func TestSummarizedDropSurvivesShutdown(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropSummarize}))
	h.grace = 50 * time.Millisecond
	h.handle(in("tg", "15", "first"))
	<-m.started
	h.handle(in("tg", "15", "dropped"))
	h.handle(in("tg", "15", "kept"))
	h.close() // the turn that would carry the summary never ran
	m.mu.Lock()
	m.block, m.started = nil, nil
	m.mu.Unlock()
	h.start()
	recs, err := h.journal().Pending()
	if err != nil || len(recs) != 3 {
		t.Fatalf("pending after shutdown: %d records (%v), want 3 (first, dropped, kept)", len(recs), err)
	}
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	if got := strings.Join(h.tg.texts(), "|"); !strings.Contains(got, "dropped") {
		t.Errorf("after the restart sent %q: the dropped message was never answered", got)
	}
}

// TestSummarizedDropFinishedWithItsNote: the turn after an overflow gives
// the model the dropped message as a line of its note, the note carrying
// the dropped record's id; the record is finished with that turn's reply,
// and a restart resumes nothing.
func TestSummarizedDropFinishedWithItsNote(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withQueue(QueueConfig{Mode: lanes.Followup, Cap: 1, Drop: lanes.DropSummarize}))
	first := in("tg", "16", "first")
	h.handle(first)
	<-m.started
	h.handle(in("tg", "16", "dropped"))
	h.handle(in("tg", "16", "kept"))
	close(m.block)
	h.drained()
	route, _ := h.d.Route(first)
	var note *sessions.Message
	hist := h.history(route.Key.String())
	for i := range hist {
		if hist[i].Role == sessions.RoleUser && strings.Contains(hist[i].Text(), "queue overflow") {
			note = &hist[i]
		}
	}
	if note == nil || !strings.Contains(note.Text(), "dropped") || len(note.RecordIDs) != 1 {
		t.Fatalf("no overflow note naming the dropped message with its record id in %+v", hist)
	}
	if recs, _ := h.journal().Pending(); len(recs) != 0 {
		t.Errorf("%d records pending after the drain", len(recs))
	}
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 0 {
		t.Fatalf("restart resumed %d (%v), want nothing", n, err)
	}
}
