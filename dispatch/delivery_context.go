package dispatch

import (
	"context"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// deliveryContextOf is the entry's record of a reply sent to a: the
// channel, bot account, chat and thread (seed 002's deliveryContext).
func deliveryContextOf(a channels.Address) sessions.DeliveryContext {
	return sessions.DeliveryContext{Channel: a.Channel, To: a.ChatID, AccountID: a.AccountID, ThreadID: a.ThreadID}.Clean()
}

// noteDelivered records in rp's session entry where its reply was just
// delivered (Entry.DeliveryContext), once every chunk was accepted. The
// entry is written only when the place changed, so a session that keeps
// replying to one chat costs no index write per reply. A reply without a
// session (a notice) or whose session is gone changes nothing; a failed
// write is logged: the reply itself was delivered.
func (o *outbox) noteDelivered(ctx context.Context, rp sessions.Reply, a channels.Address) {
	d := o.d
	if rp.SessionKey == "" || rp.AgentID == "" || a.Channel == "" {
		return
	}
	want := deliveryContextOf(a)
	key, err := routing.Parse(rp.SessionKey)
	if err != nil {
		d.log.Warn("reply's session key unreadable; delivery context not recorded", zap.String("reply_id", rp.ID), zap.Error(err))
		return
	}
	store, err := d.opts.Sessions.Store(rp.AgentID)
	if err != nil {
		d.log.Warn("delivery context not recorded", zap.String("agent_id", rp.AgentID), zap.Error(err))
		return
	}
	e, ok, err := store.Get(key)
	if err != nil || !ok || e.DeliveryContext == want {
		return
	}
	_, err = store.Patch(ctx, key, func(e *sessions.Entry) error {
		e.DeliveryContext = want
		return nil
	})
	if err != nil && ctx.Err() == nil {
		d.log.Warn("delivery context not recorded", zap.Stringer("session_key", key), zap.Error(err))
	}
}
