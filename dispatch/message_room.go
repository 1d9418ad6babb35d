package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// messageTool gives a turn its message tool room and keeps the room's
// record of message ids (sessions.RoomMessages) it acts on. It holds no
// state of its own.
type messageTool struct{ d *Dispatcher }

// The message tool (issue 14) acts through a messageRoom: the turn's room
// (channel, account, chat, thread or topic) and nothing else, whatever the
// model asks. Its record is sessions.RoomMessages: the ids of the inbound
// messages of the room's turns (noted when the turn starts) and of the
// bot's own messages (reply chunks as they are delivered, the tool's own
// replies), kept only for agents that offer the tool. React and reply
// target a message in the record; edit and delete one of the bot's own.
// Every platform call waits for the chat's edit gate (one call a second
// per chat, shared with streaming drafts) and a 429 pushes the gate past
// its retry_after.

// roomRecord is the RoomMessages key of out's room.
func roomRecord(out channels.Outbound) string {
	return out.ChatKey() + "/" + out.ThreadID
}

// messageCalls bounds the attempts of one platform call of the tool (a 429
// is waited out and tried again).
const messageCalls = 3

// noteTimeout bounds noting the bot's own messages after a send.
const noteTimeout = 5 * time.Second

// messageRoom implements agents.Room for one turn.
type messageRoom struct {
	d    *Dispatcher
	a    channels.Adapter
	out  channels.Outbound // the turn's reply target; ReplyToID is the message answered
	room string            // roomRecord(out)
	once string            // turnOnce of the turn's work: its posts' identity
	log  *zap.Logger

	mu      sync.Mutex
	reacted map[string]bool // guarded by mu: messages the tool reacted to
	replied bool            // guarded by mu: the tool posted a reply
}

var _ agents.Room = (*messageRoom)(nil)

// room returns the turn's Room for the message tool, after noting
// the turn's inbound message ids and those of the room history it took
// (history) in the room's record; nil (no room) when the agent does not
// offer the tool or the turn has no chat. An ambient turn (ambient.go)
// has the tool unless the agent's policy denies it, and its default
// target is the newest room message it read.
func (mt messageTool) room(ctx context.Context, a channels.Adapter, out channels.Outbound, agentID string, ws []*work, history []string, ambient bool, log *zap.Logger) agents.Room {
	d := mt.d
	if a == nil || out.Channel == "" || out.ChatID == "" || !mt.offered(agentID, ambient) {
		return nil
	}
	out.Interaction, out.Draft, out.Text, out.Answers = nil, "", "", nil
	if ambient {
		out.ReplyToID = ""
		if len(history) > 0 {
			out.ReplyToID = history[len(history)-1]
		}
	}
	r := &messageRoom{d: d, a: a, out: out, room: roomRecord(out), once: turnOnce(ws),
		log: log.WithLazy(zap.String("tool", agents.MessageToolName))}
	var seen []sessions.RoomMessage
	for _, id := range history {
		if id != "" {
			seen = append(seen, sessions.RoomMessage{ID: id})
		}
	}
	mt.noteSeen(ctx, r.room, ws, seen, log)
	return r
}

// offered reports whether a turn of agentID (ambient or not) has the
// message tool.
func (mt messageTool) offered(agentID string, ambient bool) bool {
	r := mt.d.opts.Runner
	return r.OffersMessageTool(agentID) || (ambient && r.AmbientTool(agentID))
}

// spoke reports whether room, a turn's message tool room, posted a reply.
func spoke(room agents.Room) bool {
	r, ok := room.(*messageRoom)
	if !ok || r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replied
}

// noteSeen records the inbound message ids of ws (those of room) and
// extra as seen in room.
func (mt messageTool) noteSeen(ctx context.Context, room string, ws []*work, extra []sessions.RoomMessage, log *zap.Logger) {
	d := mt.d
	seen := extra
	for _, w := range ws {
		if w.Agent == nil && w.In.MessageID != "" && !w.In.Ambient && roomRecord(outboundFor(w.In)) == room {
			seen = append(seen, sessions.RoomMessage{ID: w.In.MessageID, At: w.In.Time})
		}
	}
	if len(seen) == 0 {
		return
	}
	if err := d.opts.Sessions.Messages().NoteMessages(ctx, room, seen); err != nil {
		log.Warn("room messages not noted; the message tool will not find them", zap.Error(err))
	}
}

// noteOwn records ids as the bot's own messages in out's room, for an
// agent that offers the message tool.
func (mt messageTool) noteOwn(ctx context.Context, agentID string, out channels.Outbound, ids []string) {
	d := mt.d
	var msgs []sessions.RoomMessage
	for _, id := range ids {
		if id != "" {
			msgs = append(msgs, sessions.RoomMessage{ID: id, Own: true, At: d.opts.Now()})
		}
	}
	if len(msgs) == 0 || out.ChatID == "" || !d.opts.Runner.OffersMessageTool(agentID) {
		return
	}
	// A reply sent at shutdown is still noted (briefly).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := d.opts.Sessions.Messages().NoteMessages(ctx, roomRecord(out), msgs); err != nil {
		d.log.Warn("own messages not noted; the message tool cannot edit them", zap.String("channel", out.Channel),
			zap.String("chat_id", out.ChatID), zap.Error(err))
	}
}

// target resolves id ("" for the default) to a message of the room's
// record; own requires one of the bot's.
func (r *messageRoom) target(ctx context.Context, id string, own bool) (string, error) {
	rec := r.d.opts.Sessions.Messages()
	if id == "" {
		if !own {
			if r.out.ReplyToID == "" {
				return "", fmt.Errorf("%w: this turn answers no message; give messageId", agents.ErrUnknownMessage)
			}
			return r.out.ReplyToID, nil // the message answered: noted when the turn began
		}
		m, ok, err := rec.LatestMessage(ctx, r.room, true)
		if err != nil {
			return "", fmt.Errorf("message tool: latest own message: %w", err)
		}
		if !ok {
			return "", fmt.Errorf("%w: you have sent no message in this chat that can be changed", agents.ErrUnknownMessage)
		}
		return m.ID, nil
	}
	m, ok, err := rec.RoomMessage(ctx, r.room, id)
	if err != nil {
		return "", fmt.Errorf("message tool: look up message: %w", err)
	}
	switch {
	case !ok:
		return "", fmt.Errorf("%w: message %q is not one seen in this chat", agents.ErrUnknownMessage, id)
	case own && !m.Own:
		return "", fmt.Errorf("%w: message %q was not sent by you; only your own messages can be edited or deleted", agents.ErrNotOwnMessage, id)
	}
	return id, nil
}

func (r *messageRoom) unsupported(what string) error {
	return fmt.Errorf("%w: the %s chat does not support %s", agents.ErrUnsupported, r.out.Channel, what)
}

// React implements agents.Room.
func (r *messageRoom) React(ctx context.Context, messageID, emoji string) (err error) {
	defer r.count("react", &err)
	re, ok := r.a.(channels.Reactor)
	if !ok {
		return r.unsupported("reactions")
	}
	id, err := r.target(ctx, messageID, false)
	if err != nil {
		return err
	}
	err = r.call(ctx, "reaction", func(ctx context.Context) error {
		return re.React(ctx, channels.Reaction{Target: r.out, MessageID: id, Emoji: emoji})
	})
	if err == nil {
		r.mu.Lock()
		if r.reacted == nil {
			r.reacted = map[string]bool{}
		}
		r.reacted[id] = true
		r.mu.Unlock()
	}
	return err
}

// reactedTo is the ack reaction's keep: whether room's tool reacted to a
// message (nil when the turn has no message room).
func reactedTo(room agents.Room) func(string) bool {
	r, ok := room.(*messageRoom)
	if !ok || r == nil {
		return nil
	}
	return func(id string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.reacted[id]
	}
}

// Reply implements agents.Room: text goes out in the platform's chunks,
// the first quoting the target.
func (r *messageRoom) Reply(ctx context.Context, messageID, text string) (_ []string, err error) {
	defer r.count("reply", &err)
	c, ok := r.a.(channels.IDChunker)
	ch, ok2 := r.a.(channels.Chunker)
	if !ok || !ok2 {
		return nil, r.unsupported("replies to a message")
	}
	id, err := r.target(ctx, messageID, false)
	if err != nil {
		return nil, err
	}
	o := r.out
	o.ReplyToID, o.ReplyToMode, o.Text = id, channels.ReplyToFirst, text
	o.DeliveryID = postOnceID(r.once, "reply", id, text)
	var ids []string
	for i, chunk := range ch.Chunks(o) {
		var sent string
		err := r.call(ctx, "reply", func(ctx context.Context) error {
			var err error
			sent, err = c.SendChunkID(ctx, o, i, chunk)
			return err
		})
		if sent != "" {
			ids = append(ids, sent)
			r.noteOwn(ctx, sent)
			r.mu.Lock()
			r.replied = true
			r.mu.Unlock()
		}
		if err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// noteOwn records a message the tool posted as the bot's own (so a later
// call may edit it), even when the turn is being cancelled.
func (r *messageRoom) noteOwn(ctx context.Context, id string) {
	m := sessions.RoomMessage{ID: id, Own: true, At: r.d.opts.Now()}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := r.d.opts.Sessions.Messages().NoteMessages(ctx, r.room, []sessions.RoomMessage{m}); err != nil {
		r.log.Warn("own message not noted; the message tool cannot edit it", zap.Error(err))
	}
}

// Edit implements agents.Room (cut to one message).
func (r *messageRoom) Edit(ctx context.Context, messageID, text string) (_ string, err error) {
	defer r.count("edit", &err)
	dr, ok := r.a.(channels.Drafter)
	if !ok {
		return "", r.unsupported("editing messages")
	}
	id, err := r.target(ctx, messageID, true)
	if err != nil {
		return "", err
	}
	return id, r.call(ctx, "edit", func(ctx context.Context) error { return dr.EditDraft(ctx, r.out, id, text) })
}

// Delete implements agents.Room; the message leaves the room's record.
func (r *messageRoom) Delete(ctx context.Context, messageID string) (_ string, err error) {
	defer r.count("delete", &err)
	dr, ok := r.a.(channels.Drafter)
	if !ok {
		return "", r.unsupported("deleting messages")
	}
	id, err := r.target(ctx, messageID, true)
	if err != nil {
		return "", err
	}
	if err := r.call(ctx, "delete", func(ctx context.Context) error { return dr.DeleteDraft(ctx, r.out, id) }); err != nil {
		return id, err
	}
	// Gone: a later delete without messageId takes the message before it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
	defer cancel()
	if err := r.d.opts.Sessions.Messages().ForgetMessage(fctx, r.room, id); err != nil {
		r.log.Warn("deleted message not forgotten", zap.Error(err))
	}
	return id, nil
}

// Ask implements agents.Room: text with a signed button per choice, as
// one message the bot owns (it may edit or delete it later).
func (r *messageRoom) Ask(ctx context.Context, text string, choices []string) (_ string, err error) {
	defer r.count("ask", &err)
	ak, ok := r.a.(channels.Asker)
	if !ok || r.d.opts.Choices == nil {
		return "", r.unsupported("buttons")
	}
	buttons, err := r.d.opts.Choices.Question(r.out.Address, choices)
	if err != nil {
		return "", fmt.Errorf("%w: %v", agents.ErrRefused, err)
	}
	o := r.out
	o.DeliveryID = postOnceID(r.once, "ask", "", text+"\x00"+strings.Join(choices, "\x00"))
	var id string
	err = r.call(ctx, "ask", func(ctx context.Context) error {
		var err error
		id, err = ak.Ask(ctx, o, text, buttons)
		return err
	})
	if id != "" {
		r.noteOwn(ctx, id)
	}
	return id, err
}

// count counts one action by its outcome *err.
func (r *messageRoom) count(action string, err *error) {
	result := "ok"
	switch {
	case *err == nil:
	case errors.Is(*err, agents.ErrRefused):
		result = "failed"
	case errors.Is(*err, agents.ErrUnknownMessage), errors.Is(*err, agents.ErrNotOwnMessage), errors.Is(*err, agents.ErrUnsupported):
		result = "refused"
	default:
		result = "error"
	}
	r.d.opts.Metrics.MessageTool.WithLabelValues(r.out.Channel, action, result).Inc()
}

// call makes one platform call after the chat's edit gate; a rate-limit
// answer pushes the gate past its retry_after and the call is tried again
// (messageCalls in all). A failure is ErrRefused for the model (the
// platform's error, which may hold a URL, is only logged).
func (r *messageRoom) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	key := r.out.ChatKey()
	var err error
	for attempt := 0; attempt < messageCalls; attempt++ {
		if werr := r.d.gate.wait(ctx, key); werr != nil {
			return werr
		}
		cctx, cancel := context.WithTimeout(ctx, draftCallLimit)
		err = f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ra := channels.RetryAfter(err)
		if ra <= 0 || ra > draftCallLimit {
			break
		}
		r.log.Info("message tool rate limited", zap.String("op", op), zap.Duration("retry_after", ra))
		r.d.gate.delay(key, time.Now().Add(ra))
	}
	r.log.Warn("message tool call failed", zap.String("op", op), zap.String("chat_id", r.out.ChatID), zap.Error(err))
	if ra := channels.RetryAfter(err); ra > 0 {
		return fmt.Errorf("%w: the chat is rate limited; try the %s again in %s", agents.ErrRefused, op, ra.Round(time.Second))
	}
	if posts(op) && !channels.Answered(err) {
		return fmt.Errorf("%w: the %s platform's answer to the %s was lost, so it may have been posted: do not post it again unless you know it was not",
			agents.ErrRefused, r.out.Channel, op)
	}
	return fmt.Errorf("%w: the %s platform did not accept the %s (the message may be gone or too old)", agents.ErrRefused, r.out.Channel, op)
}

// posts reports whether the tool's call op posts a message (whose
// repeat after an unknown outcome may show it twice).
func posts(op string) bool { return op == "reply" || op == "ask" }

// withMessageID puts the platform message id before text, where the model
// of an agent that offers the message tool can read it ("[message_id: 42]
// [Ann] hi"), for chats where the tool can act (reactions or edits).
func (mt messageTool) withMessageID(w *work, text string) string {
	if !mt.showsMessageIDs(w) || w.In.Ambient { // a batch's own id is no message
		return text
	}
	return "[message_id: " + w.In.MessageID + "] " + text
}

// showsMessageIDs reports whether w's model input shows message ids: its
// agent offers the message tool and its chat can react or edit.
func (mt messageTool) showsMessageIDs(w *work) bool {
	d := mt.d
	if w == nil || w.In.MessageID == "" || !mt.offered(w.AgentID, w.In.Ambient) {
		return false
	}
	switch d.adapter(w.In.Channel, w.In.AccountID).(type) {
	case channels.Reactor, channels.Drafter:
		return true
	}
	return false
}
