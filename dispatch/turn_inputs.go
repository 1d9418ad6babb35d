package dispatch

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// The inputs step of a turn: the new messages the model is given.

// inheritMessages is how many of the parent's recent messages seed a new
// thread's session (thread.inheritParent: digest; fork copies the whole
// active context).
const inheritMessages = 20

// inheritRunes caps the text taken from each inherited message.
const inheritRunes = 2000

// inputs are the turn's new messages for the model: a new thread's parent
// context, the queue's overflow note, the steer-backlog note, then each
// message not yet in the transcript, the room's kept messages framed
// before the first of them.
func (t *turn) inputs(ctx context.Context) []sessions.Message {
	d := t.d
	var inputs []sessions.Message
	if t.info.Created {
		switch t.inheritMode() {
		case channels.InheritDigest:
			if m, ok := t.parentContext(ctx); ok {
				inputs = append(inputs, m)
			}
		case channels.InheritFork:
			t.forkParent(ctx)
		}
	}
	var dropped []*work
	for _, w := range t.ws {
		if w.Summarized && !w.Consumed {
			dropped = append(dropped, w)
		}
	}
	if len(dropped) > 0 {
		inputs = append(inputs, d.overflowNote(dropped))
	}
	var backlog []*work
	for _, w := range t.ws {
		if w.Steered && !w.Consumed && !w.Summarized {
			backlog = append(backlog, w)
		}
	}
	if len(backlog) > 0 {
		inputs = append(inputs, d.steerBacklogNote(backlog))
	}
	for _, w := range t.ws {
		switch {
		case w.Consumed, w.Summarized, w.Steered:
		case w.In.Ambient && !t.ambient:
			// A batch beside addressed messages: its events go with them
			// (the room context) and it finishes with their turn.
		case w.Agent != nil:
			m := w.Agent.Message
			m.RecordIDs = recordIDs([]*work{w})
			inputs = append(inputs, m)
		default:
			n := len(inputs)
			if inputs = d.appendUser(ctx, inputs, w, t.media); len(inputs) > n {
				inputs[n] = t.hist.attach(inputs[n]) // the room's kept messages go before the first new input
			}
		}
	}
	return inputs
}

// parentContext returns the user message that seeds a thread's or
// topic's new session with its parent's recent conversation, or false
// when the room does not inherit, the key has no parent, or the parent
// has nothing yet. Tool calls and results are left out; the text is
// framed as context, not as instructions.
func (t *turn) parentContext(ctx context.Context) (sessions.Message, bool) {
	w := t.first
	tr, ok := t.parentTranscript()
	if !ok {
		return sessions.Message{}, false
	}
	c, err := tr.Context(ctx)
	if err != nil {
		t.d.log.Warn("parent context not loaded", zap.Stringer("session_key", w.Key),
			zap.Stringer("parent_key", w.Key.Parent()), zap.Error(err))
		return sessions.Message{}, false
	}
	msgs := c.Messages
	if len(msgs) > inheritMessages {
		msgs = msgs[len(msgs)-inheritMessages:]
	}
	var b strings.Builder
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text())
		if text == "" || (m.Role != sessions.RoleUser && m.Role != sessions.RoleAssistant) {
			continue
		}
		if r := []rune(text); len(r) > inheritRunes {
			text = string(r[:inheritRunes]) + "…"
		}
		who := "user"
		if m.Role == sessions.RoleAssistant {
			who = "you"
		}
		fmt.Fprintf(&b, "%s: %s\n", who, text)
	}
	if b.Len() == 0 {
		return sessions.Message{}, false
	}
	return sessions.UserText("[This thread continues a conversation from its parent channel. Its recent messages, "+
		"for context only:]\n"+b.String()+"[end of parent context]", t.origin.At), true
}

// inheritMode is what the turn's new session takes from its parent's:
// the room's thread.inheritParent, nothing for an agent's own message.
func (t *turn) inheritMode() channels.Inherit {
	if t.first.Agent != nil {
		return channels.InheritNone
	}
	return t.d.rt.Load().RoomFor(t.first.In).InheritParent
}

// parentTranscript opens the transcript of the parent session of the
// turn's key, or false when the key has no parent or the parent no
// session.
func (t *turn) parentTranscript() (sessions.TranscriptLog, bool) {
	w := t.first
	parent := w.Key.Parent()
	if parent == w.Key {
		return nil, false
	}
	e, ok, err := t.store.Get(parent)
	if err == nil && ok {
		var tr sessions.TranscriptLog
		if tr, err = t.store.TranscriptOf(e); err == nil {
			return tr, true
		}
	}
	if err != nil {
		t.d.log.Warn("parent session not opened", zap.Stringer("session_key", w.Key),
			zap.Stringer("parent_key", parent), zap.Error(err))
	}
	return nil, false
}

// forkParent starts a new thread's or topic's transcript with a copy of
// its parent's active context (thread.inheritParent: fork,
// sessions.ForkContext), before the turn's own inputs. It runs once, when
// Begin created the session: a turn resumed after a crash finds the
// session already there and forks nothing again. A failure is logged and
// the thread starts empty.
func (t *turn) forkParent(ctx context.Context) {
	from, ok := t.parentTranscript()
	if !ok {
		return
	}
	to, err := t.store.TranscriptOf(t.entry)
	n, head := 0, ""
	if err == nil {
		n, head, err = sessions.ForkContext(ctx, from, to)
	}
	log := t.log.With(zap.Stringer("parent_key", t.first.Key.Parent()))
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("parent transcript not forked; the thread starts empty", zap.Error(err))
		}
		return
	}
	if n > 0 {
		t.store.AddCounters(t.first.Key, sessions.Counters{Messages: n})
	}
	log.Info("thread forked from its parent", zap.Int("messages", n), zap.String("parent_head", head))
}

// appendUser adds w's user message to inputs, joined to the last one when
// w is the next part of the burst that message ends with.
func (d *Dispatcher) appendUser(ctx context.Context, inputs []sessions.Message, w *work, mt mediaTurn) []sessions.Message {
	// A part with attachments gets its own user message (its images and
	// transcriptions are built from the attachments); plain text parts
	// are glued onto the previous part.
	if w.Prev != "" && len(inputs) > 0 && len(w.In.Attachments) == 0 {
		last := &inputs[len(inputs)-1]
		ids := last.RecordIDs
		if len(ids) > 0 && ids[len(ids)-1] == w.Prev && len(last.Content) == 1 && last.Content[0].Type == sessions.BlockText {
			last.Content[0].Text += w.Glue + w.In.Text
			last.RecordIDs = append(ids[:len(ids):len(ids)], w.RecordID)
			return inputs
		}
	}
	return append(inputs, d.userMessage(ctx, w, mt))
}

// userMessage is the transcript message of an inbound message (its
// attachments fetched and resolved, media.go); it carries the record id so
// recovery can tell it was appended.
func (d *Dispatcher) userMessage(ctx context.Context, w *work, mt mediaTurn) sessions.Message {
	at := w.In.Time
	if at.IsZero() {
		at = d.opts.Now()
	}
	in, images := w.In, []sessions.Content(nil)
	if len(in.Attachments) > 0 {
		in, images = d.media.withMedia(ctx, in, mt)
	}
	m := sessions.UserText(d.tool.withMessageID(w, inputText(in)), at)
	if strings.TrimSpace(inputText(in)) == "" && len(images) > 0 {
		m.Content = nil // an image alone: no empty text block
	}
	m.Content = append(m.Content, images...)
	if w.RecordID != "" {
		m.RecordIDs = []string{w.RecordID}
	}
	return m
}

// inputText is what the model sees for one message: in groups the sender's
// name comes first so the agent can tell speakers apart.
func inputText(in channels.Inbound) string {
	if in.ChatType != channels.Direct && in.SenderName != "" {
		return "[" + in.SenderName + "] " + in.Text
	}
	return in.Text
}
