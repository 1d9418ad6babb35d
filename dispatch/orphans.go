package dispatch

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// orphanEvery is how often a dispatcher on shared storage (PostgreSQL
// replicas) looks for the work of a process that died or stopped.
var orphanEvery = 2 * time.Second

// adoptOrphans takes over, every orphanEvery or when another process
// closes its Delivery (WaitOrphans), until ctx ends or the dispatcher
// shuts down, the records and replies another process left
// (sessions.Orphans) and runs them as Resume runs a predecessor's: the
// drafts it left are cleared first, then its replies are sent and its
// records run again, recovered from their transcripts.
func (r *recovery) adoptOrphans(ctx context.Context, o sessions.Orphans) {
	d := r.d
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(r.stop, stop)()
	for {
		o.WaitOrphans(ctx, orphanEvery)
		if ctx.Err() != nil || d.closing.Load() {
			return
		}
		recs, replies, err := o.Orphans(ctx)
		if err != nil && ctx.Err() == nil {
			// What was taken over before the failure is this process's
			// now: it runs below.
			d.log.Warn("looking for work left by stopped replicas failed", zap.Error(err))
		}
		if len(recs) == 0 && len(replies) == 0 {
			continue
		}
		d.clearLeftDrafts(ctx)
		n := r.resumeWork(ctx, replies, recs, true)
		d.log.Info("took over work left by a stopped replica", zap.Int("messages", n), zap.Int("replies", len(replies)))
	}
}
