package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// Memory in chat (issue 24): /memory shows a member the notes the bot
// keeps about them (their sender scope, under every agent), /forget erases
// them all and /forget n one of the current agent's. The notes of a room
// or of the agent itself are the operator's to edit (gateway memory); a
// member reaches only their own. A turn's Speaker names the same scopes.

// maxMemoryReply bounds /memory's answer (characters); the rest is counted.
const maxMemoryReply = 3500

// speaker is who and where the turn answers, for its memory scopes (nil
// for internal work: subagent runs and announcements). A turn that
// answers messages of several people (a group's collect turn) has no one
// sender: the room's notes apply, nobody's own, which another person's
// message in the same turn could otherwise have told to the room.
func (t *turn) speaker() *agents.Speaker {
	if t.last.Agent != nil {
		return nil
	}
	sp := speakerOf(t.last.In)
	for _, w := range t.ws {
		for _, x := range expand(w) {
			if o := speakerOf(x.In); x.Agent == nil && (o.Channel != sp.Channel || o.SenderID != sp.SenderID) {
				sp.SenderID = ""
				return sp
			}
		}
	}
	return sp
}

// speakerOf is in's sender and room. The person is the Principal where a
// channel sets one (the web chat's SenderID names a conversation).
func speakerOf(in channels.Inbound) *agents.Speaker {
	sender := in.Principal
	if sender == "" {
		sender = in.SenderID
	}
	return &agents.Speaker{Channel: in.Channel, SenderID: sender, ChatID: in.ChatID, Group: in.ChatType != channels.Direct}
}

// memory answers /memory and /forget.
func (c commander) memory(ctx context.Context, w *work) string {
	d := c.d
	sp := speakerOf(w.In)
	if sp.Channel == "" || sp.SenderID == "" {
		return "There is no sender to keep notes about here."
	}
	mem := d.opts.Sessions.Memory()
	log := d.log.With(zap.Stringer("session_key", w.Key), zap.String("command", w.Command))
	mine, err := senderScopes(ctx, d.opts.Sessions, sp)
	if err != nil {
		log.Error("memory unavailable", zap.Error(err))
		return "Sorry, the memory is unavailable right now."
	}
	if w.Command == "forget" {
		return forget(ctx, mem, w, sp, mine, log)
	}
	if len(mine) == 0 {
		return "I keep no notes about you."
	}
	if sp.Group {
		return privateMemory(mine)
	}
	// Notes are numbered per agent and /forget n takes this chat's
	// agent's: notes of another agent say whose they are.
	labelled := len(mine) > 1 || mine[0].AgentID != w.AgentID
	var b strings.Builder
	if labelled {
		fmt.Fprintf(&b, "What I keep about you, by agent (/forget erases it all, /forget n erases note n of [%s]):", w.AgentID)
	} else {
		b.WriteString("What I keep about you (/forget erases it, /forget n one note):")
	}
	shown, total := 0, 0
	for _, s := range mine {
		for _, n := range s.notes {
			total++
			line := fmt.Sprintf("\n%d. %s", n.ID, strings.Join(strings.Fields(n.Text), " "))
			if labelled {
				line = fmt.Sprintf("\n[%s] %d. %s", s.AgentID, n.ID, strings.Join(strings.Fields(n.Text), " "))
			}
			if b.Len()+len(line) > maxMemoryReply {
				continue
			}
			b.WriteString(line)
			shown++
		}
	}
	if total > shown {
		fmt.Fprintf(&b, "\n(%d more not shown)", total-shown)
	}
	return b.String()
}

// privateMemory answers /memory in a group or channel: how many notes
// there are, not what they say (the room would read them; a person's
// notes are read into turns only in direct chats unless the operator
// chose otherwise, agents.MemoryConfig.SenderInGroups).
func privateMemory(mine []heldNotes) string {
	total := 0
	for _, s := range mine {
		total += len(s.notes)
	}
	what := fmt.Sprintf("%d notes", total)
	if total == 1 {
		what = "1 note"
	}
	return "I keep " + what + " about you. They are private: send /memory to me in a direct chat to read them " +
		"(/forget here erases them all)."
}

// forget erases the sender's notes: all of them under every agent, or
// note n of the current agent's.
func forget(ctx context.Context, mem sessions.Memory, w *work, sp *agents.Speaker, mine []heldNotes, log *zap.Logger) string {
	arg := strings.TrimPrefix(strings.TrimSpace(w.Args), "#")
	if arg != "" {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id < 1 {
			return "Usage: /forget [n] — n is a note number from /memory."
		}
		err = mem.ForgetNote(ctx, sessions.SenderScope(w.AgentID, sp.Channel, sp.SenderID), id)
		switch {
		case errors.Is(err, sessions.ErrNoNote):
			return fmt.Sprintf("I keep no note %d about you. /memory lists them.", id)
		case err != nil:
			log.Error("memory forget failed", zap.Error(err))
			return "Sorry, the note could not be erased right now."
		}
		log.Info("member erased a memory note", zap.String("agent_id", w.AgentID), zap.Int64("note", id))
		return fmt.Sprintf("Forgot note %d.", id)
	}
	total := 0
	for _, s := range mine {
		n, err := mem.ForgetScope(ctx, s.MemoryScope)
		if err != nil {
			log.Error("memory forget failed", zap.Error(err))
			return "Sorry, your notes could not be erased right now; some may remain. Please try again."
		}
		total += n
	}
	log.Info("member erased their memory notes", zap.Int("notes", total))
	switch total {
	case 0:
		return "I kept no notes about you."
	case 1:
		return "Forgot the 1 note I kept about you."
	}
	return fmt.Sprintf("Forgot the %d notes I kept about you.", total)
}

// heldNotes is a sender scope and the notes it holds.
type heldNotes struct {
	sessions.MemoryScope
	notes []sessions.MemoryNote
}

// senderScopes are sp's sender scopes that hold notes, with their notes,
// under every agent, sorted by agent: those the store lists, so an agent
// that holds no session any more (pruned, deleted, out of the config) has
// its notes shown by /memory and erased by /forget too.
func senderScopes(ctx context.Context, b sessions.Backend, sp *agents.Speaker) ([]heldNotes, error) {
	all, err := b.Memory().MemoryScopes(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []heldNotes
	for _, info := range all {
		s := sessions.SenderScope(info.Scope.AgentID, sp.Channel, sp.SenderID)
		if info.Scope != s {
			continue
		}
		notes, err := b.Memory().Notes(ctx, s)
		if err != nil {
			return nil, err
		}
		if len(notes) > 0 {
			out = append(out, heldNotes{s, notes})
		}
	}
	return out, nil
}
