package dispatch

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// acker puts a room's ack reaction on the message a turn answers and
// takes it off. It holds no state of its own.
type acker struct{ d *Dispatcher }

// ackTimeout bounds each reaction call: an acknowledgement is never worth
// holding up a turn or its lane.
const ackTimeout = 5 * time.Second

// ackReaction puts the room's ackReaction (channels.Room.AckReaction) on
// the message a turn answers, when the bot was addressed in a group and
// the adapter can react; the returned func takes it off and is called
// once the answer is delivered (or the turn ended otherwise). The reaction
// is set on its own goroutine so the turn does not wait for it; failures
// are logged at debug and never fail the turn. It is left on when keep
// (nil: never) says the message tool put a reaction of its own on the
// message: taking the bot's reaction off would take that one too
// (Telegram keeps one reaction per bot and message).
func (ak acker) ackReaction(ctx context.Context, a channels.Adapter, w *work, keep func(messageID string) bool) func() {
	d := ak.d
	rx, ok := a.(channels.Reactor)
	if a == nil || !ok || w.Agent != nil || w.In.ChatType == channels.Direct || !w.In.Mentioned || w.In.MessageID == "" {
		return func() {}
	}
	emoji := d.rt.Load().RoomFor(w.In).AckReaction
	if emoji == "" {
		return func() {}
	}
	r := channels.Reaction{Target: outboundFor(w.In), MessageID: w.In.MessageID, Emoji: emoji}
	set := make(chan struct{})
	go func() {
		defer close(set)
		ak.react(ctx, rx, r)
	}()
	return func() {
		<-set
		if keep != nil && keep(r.MessageID) {
			return
		}
		r.Remove = true
		ak.react(context.WithoutCancel(ctx), rx, r)
	}
}

func (ak acker) react(ctx context.Context, rx channels.Reactor, r channels.Reaction) {
	d := ak.d
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	if err := rx.React(ctx, r); err != nil {
		d.log.Debug("ack reaction failed", zap.String("channel", r.Target.Channel), zap.String("chat_id", r.Target.ChatID),
			zap.String("message_id", r.MessageID), zap.Bool("remove", r.Remove), zap.Error(err))
	}
}
