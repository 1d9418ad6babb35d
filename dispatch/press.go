package dispatch

import (
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// pressOfEarlierSession reports whether in, a button press, answers a
// question asked before route's session began (the chat ran /new or
// /reset since) or of a session the reset policy rc has expired (a daily
// or idle reset, done when the next message runs): that question's
// session is archived, or will be before the press would run, so its
// press is an expired button, never a message typed into the new session. The
// question's time is the minute its signed data carries, so a question
// asked in the same minute as the reset is given the benefit of the
// doubt.
func (d *Dispatcher) pressOfEarlierSession(in channels.Inbound, route routing.Route, rc sessions.ResetConfig) bool {
	if !in.Press || in.PressAsked.IsZero() {
		return false
	}
	store, err := d.opts.Sessions.Store(route.AgentID)
	if err != nil {
		return false // the turn reports the store; the press is not judged here
	}
	e, ok, err := store.Get(route.Key)
	if err != nil || !ok || e.SessionStartedAt.IsZero() {
		return false
	}
	stale, _ := sessions.Evaluate(rc, route.Key, e, d.opts.Now())
	if !stale && in.PressAsked.Add(time.Minute).After(e.SessionStartedAt) {
		return false
	}
	d.log.Info("press refused: its question was asked before the session was reset",
		zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID), zap.String("sender_id", in.SenderID),
		zap.Stringer("session_key", route.Key), zap.Time("asked", in.PressAsked), zap.Time("session_started", e.SessionStartedAt), zap.Bool("session_expired", stale))
	return true
}
