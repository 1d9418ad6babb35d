package dispatch

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// Reactions and edits heard (issue 23). An adapter hands a reaction to one
// of the bot's messages, or an edit, as an Inbound with an Event. Its room
// decides (channels.EventsConfig, off by default): off drops it; note
// keeps it in the session's history for the next turn's context, like an
// unaddressed room message (a DM's too), and starts no turn; turn (a
// reaction) and answer (an edit) make it a message of the session that
// starts a turn. The access policy applies to the reactor or editor as to
// a sender: a refused one never reaches the agent, and is told nothing
// (no pairing code for a reaction). An edit is heard only when the edited
// message addresses the bot, as the message had to be answered.

// event handles in, an event. handled false hands the caller a message
// to run as any other (mode turn or answer), its text saying what
// happened and its record id its own (RecordID).
func (d *Dispatcher) event(ctx context.Context, rt *Runtime, in channels.Inbound, verdict Verdict) (msg channels.Inbound, handled bool, err error) {
	room := rt.RoomFor(in)
	mode := room.Events.Mode(in.Event.Kind)
	log := d.log.With(zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID), zap.String("event", in.Event.Kind))
	if mode == channels.EventsOff || !room.Enabled {
		log.Debug("event not heard in this room")
		return in, true, channels.ErrRejected
	}
	if !verdict.Allow && !(verdict.Unaddressed && d.addressed(in)) {
		d.opts.Metrics.Refused.WithLabelValues(in.Channel).Inc()
		log.Debug("event refused", zap.String("sender_id", in.SenderID), zap.String("reason", verdict.Reason))
		return in, true, channels.ErrRejected
	}
	in.Text = eventText(in)
	if mode == channels.EventsTurn || mode == channels.EventsAnswer {
		return in, false, nil
	}
	return in, true, d.noteEvent(ctx, rt, in, room, log)
}

// eventText is what the agent reads of an event.
func eventText(in channels.Inbound) string {
	if in.Event.Kind == channels.EventReaction {
		return fmt.Sprintf("(reacted %s to your message [message_id: %s])", in.Event.Emoji, in.MessageID)
	}
	return fmt.Sprintf("(edited their message [message_id: %s]; it now reads:)\n%s", in.MessageID, in.Text)
}

// eventID is the id an event is kept and journaled under: the message's,
// the kind and the stamp, so a redelivery is a duplicate and another
// reaction or a later edit is not.
func eventID(in channels.Inbound) string {
	return in.MessageID + ":" + in.Event.Kind + ":" + in.Event.Stamp
}

// noteEvent keeps an event in its session's history for the next turn.
func (d *Dispatcher) noteEvent(ctx context.Context, rt *Runtime, in channels.Inbound, room channels.Room, log *zap.Logger) error {
	route, err := rt.Route(in)
	if err != nil {
		log.Warn("event not routable", zap.Error(err))
		return channels.ErrRejected
	}
	at := in.Time
	if at.IsZero() {
		at = d.opts.Now()
	}
	lim := eventLimits(room)
	dup, err := d.opts.Sessions.History().Append(ctx, route.Key.String(), sessions.HistoryEntry{
		MessageID: eventID(in), SenderID: in.SenderID, SenderName: in.SenderName, At: at, Text: in.Text,
	}, lim)
	switch {
	case err != nil && isStorage(err):
		d.opts.Metrics.StorageErrors.Inc()
		log.Error("event refused: storage unavailable", zap.Error(err))
		return fmt.Errorf("dispatch: event: %w: %w", channels.ErrUnavailable, err)
	case err != nil:
		log.Error("event not kept", zap.Error(err))
		return channels.ErrRejected
	case dup:
		d.opts.Metrics.Duplicates.WithLabelValues(in.Channel).Inc()
		return channels.ErrDuplicate
	}
	log.Debug("event kept for the next turn", zap.Stringer("session_key", route.Key))
	return nil
}

// eventLimits are the room's history limits, with room for events where
// the room hears them but keeps no chatter (historyLimit 0, or a DM).
func eventLimits(room channels.Room) sessions.HistoryLimits {
	lim := historyLimits(room)
	if lim.Count <= 0 && room.Events.Hears() {
		lim.Count = channels.MaxHistoryLimit
	}
	return lim
}

// hearsEvents reports whether in's room keeps events, so a DM session
// looks for kept ones before its turn (DMs keep no other history).
func (d *Dispatcher) hearsEvents(in channels.Inbound) bool {
	return d.rt.Load().RoomFor(in).Events.Hears()
}

// eventRecordSuffix makes an event's journal id its own (RecordID).
func eventRecordSuffix(in channels.Inbound) string {
	if in.Event == nil {
		return ""
	}
	return ":" + strings.Join([]string{in.Event.Kind, in.Event.Stamp}, ":")
}
