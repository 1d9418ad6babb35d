package dispatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Route resolves where in goes under rt: the bindings, then the room's
// agentId (a group, topic or channel bound to an agent in its own
// settings) above them; an explicit agent (the web API's) wins over both.
func (rt *Runtime) Route(in channels.Inbound) (routing.Route, error) {
	route, err := Resolve(rt.Resolver, in)
	if err != nil || in.Agent != "" || in.ChatType == channels.Direct {
		return route, err
	}
	id := rt.RoomFor(in).AgentID
	if id == "" {
		return route, nil
	}
	agent, err := routing.NormalizeID(id)
	if err != nil {
		return routing.Route{}, fmt.Errorf("routing: room agent %q: %w", id, err)
	}
	route.AgentID, route.Key.Agent, route.ParentKey.Agent = agent, agent, agent
	route.Binding = "room"
	return route, nil
}

// inheritMessages is how many of the parent's recent messages seed a new
// thread's session (thread.inheritParent).
const inheritMessages = 20

// inheritRunes caps the text taken from each inherited message.
const inheritRunes = 2000

// parentContext returns the user message that seeds a thread's or
// topic's new session with its parent's recent conversation, or false
// when the room does not inherit, the key has no parent, or the parent
// has nothing yet. Tool calls and results are left out; the text is
// framed as context, not as instructions.
func (d *Dispatcher) parentContext(ctx context.Context, store sessions.AgentStore, w *work, at time.Time) (sessions.Message, bool) {
	if w.Agent != nil || !d.rt.Load().RoomFor(w.In).InheritParent {
		return sessions.Message{}, false
	}
	parent := w.Key.Parent()
	if parent == w.Key {
		return sessions.Message{}, false
	}
	e, ok, err := store.Get(parent)
	if err != nil || !ok {
		return sessions.Message{}, false
	}
	tr, err := store.TranscriptOf(e)
	var c sessions.Context
	if err == nil {
		c, err = tr.Context(ctx)
	}
	if err != nil {
		d.log.Warn("parent context not loaded", zap.Stringer("session_key", w.Key),
			zap.Stringer("parent_key", parent), zap.Error(err))
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
		"for context only:]\n"+b.String()+"[end of parent context]", at), true
}

// roomPrompt is the systemPrompt of the room w came from ("" for
// internal work).
func (d *Dispatcher) roomPrompt(w *work) string {
	if w.Agent != nil {
		return ""
	}
	return d.rt.Load().RoomFor(w.In).SystemPrompt
}
