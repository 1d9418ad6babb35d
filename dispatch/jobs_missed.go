package dispatch

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// NoteJobMissed tells the room of one-shot job j that its occurrence due
// at due was not delivered: the scheduler found it later than its grace
// window (the gateway was not running then), and the job ended missed.
// Without it a reminder set for a time the daemon was down vanished in
// silence. The scheduler calls it once, after the job's settle under its
// claim (jobs.Options.Missed). Best effort: a notice not delivered is
// logged; the job's note (gateway jobs list --all) says it too.
func (d *Dispatcher) NoteJobMissed(ctx context.Context, j sessions.Job, due time.Time) {
	t := j.Target
	a := d.adapter(t.Channel, t.AccountID)
	if a == nil {
		d.log.Warn("missed job not noted: no adapter serves its room", zap.String("job_id", j.ID),
			zap.String("channel", t.Channel), zap.String("account_id", t.AccountID))
		return
	}
	out := channels.Outbound{Address: jobAddress(t)}
	out.Text = fmt.Sprintf("Reminder %s was due %s but was not delivered: the gateway was not running then. It said: %s",
		j.ID, due.In(d.jobZone(j)).Format("Mon 2006-01-02 15:04 MST"), firstLine(j.Text, 300))
	if err := a.Send(ctx, out); err != nil {
		d.log.Warn("missed job not noted in its room", zap.String("job_id", j.ID), zap.String("channel", t.Channel),
			zap.String("chat_id", t.ChatID), zap.Error(err))
		return
	}
	d.log.Info("missed job noted in its room", zap.String("job_id", j.ID), zap.Time("due", due))
}
