package dispatch

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// usageTimeout bounds recording a turn's usage row (a database that does
// not answer holds the session's lane no longer than this; the row is then
// left to `gateway usage rebuild`).
const usageTimeout = 2 * time.Second

// usageRow is the usage ledger's row of a turn whose last input was w:
// the runner's sum over the turn's assistant messages, the session, the
// room and sender it came from (none for internal work). ok is false when
// the turn called no model (a reused reply, a failure before the call).
func usageRow(w *work, res agents.Result) (sessions.UsageRow, bool) {
	u := res.Usage
	if res.AnsweredAt.IsZero() || u.Input+u.Output+u.CacheRead+u.CacheWrite == 0 && u.Cost.Total == 0 {
		return sessions.UsageRow{}, false
	}
	provider, model, err := agents.SplitModel(res.Model)
	if err != nil {
		model = res.Model
	}
	r := sessions.UsageRow{
		At: res.AnsweredAt, AgentID: w.AgentID, SessionKey: w.Key.String(), SessionID: res.SessionID, EntryID: res.EntryID,
		Provider: provider, Model: model,
		Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Cost: u.Cost.Total,
	}
	if w.Agent == nil {
		r.Channel, r.Room = w.In.Channel, roomOf(w.In)
		r.SenderID, r.SenderName = w.In.SenderID, w.In.SenderName
	}
	return r, true
}

// roomOf names in's chat for usage reports: channel:chat[:thread].
func roomOf(in channels.Inbound) string {
	if in.Channel == "" || in.ChatID == "" {
		return ""
	}
	room := in.Channel + ":" + in.ChatID
	if in.ThreadID != "" {
		room += ":" + in.ThreadID
	}
	return room
}

// laterRecorder is a usage ledger that records a row with the writes that
// follow instead of a write of its own (pgstore: the turn's reply carries
// it, at no cost in round trips).
type laterRecorder interface {
	RecordLater(rows ...sessions.UsageRow) error
}

// recordUsageLater hands a turn's row to a ledger that records it with
// the writes that follow (the reply's), and reports whether it did; a
// failure is logged.
func (d *Dispatcher) recordUsageLater(last *work, res agents.Result, log *zap.Logger) bool {
	lr, ok := d.opts.Sessions.Usage().(laterRecorder)
	if !ok {
		return false
	}
	if row, ok := usageRow(last, res); ok {
		if err := lr.RecordLater(row); err != nil {
			log.Warn("usage row not recorded", zap.Error(err))
		}
	}
	return true
}

// recordUsage adds a turn's row to the usage ledger. A failure is logged
// and never fails the turn: `gateway usage rebuild` restores the row from
// the transcript.
func (d *Dispatcher) recordUsage(ctx context.Context, last *work, res agents.Result, log *zap.Logger) {
	row, ok := usageRow(last, res)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageTimeout)
	defer cancel()
	if err := d.opts.Sessions.Usage().Record(ctx, row); err != nil {
		log.Warn("usage row not recorded", zap.Error(err))
	}
}
