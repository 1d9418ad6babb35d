package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Streaming replies (issue 11, Room.Streaming):
//
//   - progress: once a turn has run for progressDelay (1 s; quicker
//     answers show no status at all) one status message is posted
//     ("Thinking…", or the step reached by then) and edited as the turn advances (each model call, each tool by
//     name, compaction). The answer goes through the outbox as new
//     messages, so the notification carries it; then the status message is
//     deleted (edited to "Done." if it cannot be deleted).
//   - partial: the answer is posted at its first text and edited as it
//     streams (cut to one message). The final reply goes through the outbox
//     with Outbound.Draft set: its chunk 0 is an edit of the draft to the
//     final text (idempotent, so a resend after a crash cannot duplicate
//     it), further chunks are new messages. The reply's ready line retires
//     the draft's record in the same write.
//
// Edits of one chat are spaced at least editEvery apart across turns; a
// rate-limit answer pushes the chat's next edit past its retry_after; text
// that changed while waiting is skipped for the latest. Every draft is
// recorded in the journal when posted: one left by a crash is deleted at
// the next start (or edited to say the answer follows), never left as a
// half answer. A crash between the platform accepting a draft and its
// record (microseconds) can leave one stray status line.
const (
	editEvery      = time.Second
	progressDelay  = time.Second
	draftCallLimit = 10 * time.Second
	// draftKeep is how old a leftover draft may be and still be retried at
	// a later start when it could not be cleared (platforms stop allowing
	// deletes and edits after a while).
	draftKeep = 48 * time.Hour

	statusThinking   = "Thinking…"
	statusCompacting = "Compacting the conversation…"
	statusDone       = "Done."
	statusFollows    = "…the answer follows."
)

// editGate spaces the edits of each chat.
type editGate struct {
	mu   sync.Mutex
	next map[string]time.Time // guarded by mu: earliest next edit per chat
}

// reserve books an edit of chat key at now and returns 0, or returns how
// long to wait first.
func (g *editGate) reserve(key string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next == nil {
		g.next = map[string]time.Time{}
	}
	if n, ok := g.next[key]; ok && now.Before(n) {
		return n.Sub(now)
	}
	if len(g.next) >= 1024 {
		for k, n := range g.next {
			if !now.Before(n) {
				delete(g.next, k)
			}
		}
	}
	g.next[key] = now.Add(editEvery)
	return 0
}

// delay keeps chat key from editing before until (a platform's retry_after).
func (g *editGate) delay(key string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next == nil {
		g.next = map[string]time.Time{}
	}
	if until.After(g.next[key]) {
		g.next[key] = until
	}
}

// wait returns once chat key may edit (the edit is booked), or ctx's error.
func (g *editGate) wait(ctx context.Context, key string) error {
	for {
		d := g.reserve(key, time.Now())
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// draftRecord is the journal id of out's draft ("" without one).
func draftRecord(out channels.Outbound) string {
	if out.Draft == "" {
		return ""
	}
	return "draft:" + out.ChatKey() + "/" + out.Draft
}

// draftStream shows one turn's progress (or partial answer) in a draft.
// Its callbacks run on the turn's goroutine; its loop goroutine does the
// platform calls and is owned by the turn (stop waits for it).
type draftStream struct {
	d    *Dispatcher
	mode string
	dr   channels.Drafter
	out  channels.Outbound
	key  routing.Key // session key, recorded with the draft
	log  *zap.Logger
	life context.Context // bounds platform calls (not cut by the turn's end)

	mu     sync.Mutex
	want   string          // guarded by mu: what the draft should show
	answer strings.Builder // guarded by mu: partial: the answer so far
	tools  []string        // turn goroutine only: tools used since the last model call

	kick    chan struct{}
	halt    context.CancelFunc // ends the loop's waits
	done    chan struct{}
	msgID   string // loop-owned until done
	shown   string // loop-owned
	dropped bool   // loop-owned: the draft failed; no more calls
}

// startStream starts a draft stream for a turn whose reply goes to out
// through a, or returns nil when the room does not stream or a cannot.
func (d *Dispatcher) startStream(ctx context.Context, a channels.Adapter, out channels.Outbound, room channels.Room, key routing.Key) *draftStream {
	dr, ok := a.(channels.Drafter)
	if a == nil || !ok || (room.Streaming != channels.StreamProgress && room.Streaming != channels.StreamPartial) {
		return nil
	}
	if room.Streaming == channels.StreamProgress {
		out.ReplyToID = "" // the answer quotes the message, not the status line
	}
	lctx, halt := context.WithCancel(ctx)
	s := &draftStream{d: d, mode: room.Streaming, dr: dr, out: out, key: key, life: d.life,
		log:  d.log.WithLazy(zap.String("channel", out.Channel), zap.String("chat_id", out.ChatID), zap.Stringer("session_key", key)),
		kick: make(chan struct{}, 1), halt: halt, done: make(chan struct{})}
	if s.mode == channels.StreamProgress {
		s.set(statusThinking)
	}
	go s.loop(lctx)
	return s
}

// set makes text the draft's wanted content and wakes the loop.
func (s *draftStream) set(text string) {
	s.mu.Lock()
	s.want = text
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *draftStream) wanted() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want
}

// onStep is agents.Turn.OnStep.
func (s *draftStream) onStep(st agents.Step) {
	if s.mode == channels.StreamPartial {
		if st.Kind == agents.StepModel && st.Iteration > 1 {
			// The text before a tool call was not the answer.
			s.mu.Lock()
			s.answer.Reset()
			s.mu.Unlock()
		}
		return
	}
	switch st.Kind {
	case agents.StepModel:
		if st.Iteration <= 1 {
			s.set(statusThinking)
			break
		}
		// Tools run in an instant next to a model call: the status keeps
		// naming them while the model reads their results.
		s.set(fmt.Sprintf("%s (step %d, used %s)", statusThinking, st.Iteration, strings.Join(s.tools, ", ")))
		s.tools = nil
	case agents.StepTool:
		if !slices.Contains(s.tools, st.Tool) {
			s.tools = append(s.tools, st.Tool)
		}
		s.set("Using " + st.Tool + "…")
	case agents.StepCompaction:
		s.set(statusCompacting)
	}
}

// onDelta is agents.Turn.OnDelta (partial only).
func (s *draftStream) onDelta(text string) {
	if s.mode != channels.StreamPartial {
		return
	}
	s.mu.Lock()
	s.answer.WriteString(text)
	s.want = s.answer.String()
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop posts the draft and lands the latest wanted text, one edit at a time.
func (s *draftStream) loop(ctx context.Context) {
	defer close(s.done)
	if s.mode == channels.StreamProgress {
		// A turn answered within progressDelay shows no status at all
		// (the typing indicator covers it): no flash of "Thinking…", no
		// extra calls for quick answers.
		t := time.NewTimer(progressDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		for !s.dropped && ctx.Err() == nil && s.flush(ctx) {
		}
	}
}

// flush makes one call toward the wanted text; true means call again.
func (s *draftStream) flush(ctx context.Context) bool {
	text := s.wanted()
	if strings.TrimSpace(text) == "" || text == s.shown {
		return false
	}
	if s.msgID == "" {
		cctx, cancel := context.WithTimeout(s.life, draftCallLimit)
		defer cancel()
		// Never cut short: a draft posted without its record would be a
		// stray after a crash.
		id, err := s.dr.SendDraft(cctx, s.out, text)
		if err != nil {
			return s.failed(ctx, "post", err)
		}
		s.msgID, s.shown = id, text
		s.d.opts.Metrics.DraftCalls.WithLabelValues(s.out.Channel, "post").Inc()
		s.d.gate.delay(s.out.ChatKey(), time.Now().Add(editEvery))
		o := s.out
		o.Draft = id
		target, _ := json.Marshal(o)
		if err := s.d.journal.Draft(sessions.Draft{ID: draftRecord(o), SessionKey: s.key.String(), Target: target,
			MessageID: id, CreatedAt: s.d.opts.Now()}); err != nil {
			s.log.Warn("draft not recorded", zap.Error(err))
		}
		return false
	}
	if s.d.gate.wait(ctx, s.out.ChatKey()) != nil {
		return false
	}
	text = s.wanted() // the latest, after the wait
	cctx, cancel := context.WithTimeout(s.life, draftCallLimit)
	defer cancel()
	if err := s.dr.EditDraft(cctx, s.out, s.msgID, text); err != nil {
		return s.failed(ctx, "edit", err)
	}
	s.shown = text
	s.d.opts.Metrics.DraftCalls.WithLabelValues(s.out.Channel, "edit").Inc()
	return false
}

// failed handles a failed draft call: after a rate limit the chat waits
// its retry_after and the latest text is tried again; any other failure
// ends the draft's updates (the answer is still delivered).
func (s *draftStream) failed(ctx context.Context, op string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if ra := channels.RetryAfter(err); ra > 0 {
		s.log.Info("draft rate limited", zap.String("op", op), zap.Duration("retry_after", ra))
		s.d.gate.delay(s.out.ChatKey(), time.Now().Add(ra))
		if op == "post" {
			if s.d.gate.wait(ctx, s.out.ChatKey()) != nil {
				return false
			}
		}
		return true
	}
	s.log.Warn("draft update failed; no more updates this turn", zap.String("op", op), zap.Error(err))
	s.dropped = true
	return false
}
