package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// sendRetries are the waits before each new attempt at a chunk the adapter
// could not deliver (adapters already wait out rate limits themselves).
var sendRetries = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// rateLimitBudget bounds how long, in all, one reply waits out platform
// rate limits the adapter returned instead of waiting them out itself (a
// Telegram 429 with retry_after past Options.MaxRetryAfter, a Discord
// hold past its MaxRetryAfter; both a minute by default). A retry_after
// that would take a reply's waits past it gives the reply up (a dead
// letter). A var for tests.
var rateLimitBudget = 15 * time.Minute

// rateLimitWait waits d within ctx and reports whether it passed (a var:
// tests stand in for the clock).
var rateLimitWait = func(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// outbox sends replies (SPEC §3.7): deliver stores a turn's reply before
// its first chunk is sent and marks each chunk the platform accepted;
// resend finishes a reply found stored. It owns the goroutines it starts
// (goResend: replies that cannot wait on their session's lane) and waits
// for them in shutdown.
type outbox struct {
	d *Dispatcher // adapters, journal, metrics, the message tool's room notes
	// stop ends the resends started by goResend; shutdown calls it once the
	// lanes have drained. A resend cut short keeps its reply in the outbox
	// for the next start (sendReply returns without marking it).
	stop   context.Context
	cancel context.CancelFunc
	// closing ends the rate-limit waits of parked replies (outbox_park.go)
	// as soon as the dispatcher's shutdown begins: they wait on a lane,
	// and the lanes' shutdown waits for them; their replies stay stored.
	closing    context.Context
	endParking context.CancelFunc
	wg         sync.WaitGroup // counts goResend goroutines
	// placed remembers the delivery context last seen stored per session
	// key (deliveryContext.go), so a reply to the place its session
	// replied to before reads no entry (a round trip on PostgreSQL).
	placed placedCache

	mu sync.Mutex
	// parked holds, per session lane, the replies queued behind its
	// rate-limited one (outbox_park.go); a key is present while one waits.
	parked map[routing.Key][]parkedReply // guarded by mu
}

func newOutbox(d *Dispatcher) *outbox {
	stop, cancel := context.WithCancel(context.Background())
	closing, endParking := context.WithCancel(stop)
	return &outbox{d: d, stop: stop, cancel: cancel, closing: closing, endParking: endParking}
}

// goResend resends rp on a goroutine of its own, counted for shutdown. It is
// used where the reply cannot take its session's lane (a full or cancelled
// queue, a dropped item, no session): it answers messages already run, so
// it is never dropped and a lane's cancellation does not cut it short; only
// shutdown does (ctx gives its values, such as a turn's fence, not its end:
// sendReply detaches from it).
func (o *outbox) goResend(ctx context.Context, rp sessions.Reply) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.resend(ctx, rp, nil)
	}()
}

// shutdown cuts short the resends goResend started and waits for them;
// call it after the lanes drained (no turn starts one after that).
func (o *outbox) shutdown() {
	o.cancel()
	o.wg.Wait()
}

// chunksFor is how a's reply will be sent: the adapter's own split, or the
// whole text in one Send for adapters without one (web: even an empty text
// ends the waiting request).
func chunksFor(a channels.Adapter, out channels.Outbound) []string {
	if c, ok := a.(channels.Chunker); ok {
		return c.Chunks(out)
	}
	return []string{out.Text}
}

// deliver is the outbox (SPEC §3.7): it stores out, split into the chunks
// the adapter sends, as a reply answering records (one journal write, before
// anything is sent), then sends the chunks, marking each once the platform
// accepted it. The records finish with the last mark. With no adapter (or
// nothing to send) the records just finish.
//
// It returns false, having sent nothing, when the outbox refused the reply
// because the turn's session lease was lost (sessions.ErrFenced): another
// replica may run the session now.
func (o *outbox) deliver(ctx context.Context, key routing.Key, agentID string, records []string, out channels.Outbound, entryID string) bool {
	d := o.d
	a := d.adapter(out.Channel, out.AccountID)
	rp, ok, err := o.reply(a, key, agentID, records, out, entryID)
	if err != nil {
		d.log.Error("reply target not encodable; reply dropped", zap.Error(err))
	}
	if !ok {
		d.finish(records...)
		return true
	}
	err = d.journal.Ready(rp)
	if errors.Is(err, sessions.ErrFenced) {
		d.log.Warn("reply not stored: the session's lease was lost; not sent", zap.Stringer("session_key", key), zap.Error(err))
		return false
	}
	if err != nil {
		// Only a closed journal refuses (shutdown): send anyway, the
		// records stay pending and the transcript holds the reply.
		d.log.Error("outbox write failed", zap.Stringer("session_key", key), zap.Error(err))
		out.Draft = "" // the draft stays recorded and is removed: send anew
	}
	lane := key.Canonical()
	o.sendReply(ctx, a, rp, out, &lane)
	return true
}

// reply is out, sent through a, as the reply answering records (entry
// entryID of the transcript): split into the chunks the adapter sends,
// with its target. ok is false when there is nothing to send (no adapter,
// no chunks) or the target cannot be encoded (err).
func (o *outbox) reply(a channels.Adapter, key routing.Key, agentID string, records []string, out channels.Outbound, entryID string) (rp sessions.Reply, ok bool, err error) {
	d := o.d
	var chunks []string
	if a != nil && out.Channel != "" {
		chunks = chunksFor(a, out)
	}
	if len(chunks) == 0 {
		return sessions.Reply{}, false, nil
	}
	out.Text = ""
	target, err := json.Marshal(out)
	if err != nil {
		return sessions.Reply{}, false, fmt.Errorf("dispatch: reply target: %w", err)
	}
	return sessions.Reply{
		ID: uuid.NewString(), Records: records, AgentID: agentID, SessionKey: key.String(),
		Target: target, Chunks: chunks, EntryID: entryID, CreatedAt: d.opts.Now(),
		Draft: draftRecord(out), // chunk 0 edits a streamed draft: its record ends here
	}, true, nil
}

// sendReply sends rp's chunks from the first not yet sent. A stored reply
// is delivered even when its lane's run is cancelled (/stop, interrupt):
// only the end of the shutdown grace period (or, for a resend on its own
// goroutine, the outbox's shutdown once the lanes drained) cuts it short,
// leaving the rest in the outbox for the next start.
//
// A chunk the platform rate-limits for longer than the adapter waits (it
// returns the limit, channels.RetryAfter) is sent again once the limit
// passed, within rateLimitBudget for the whole reply. lane, when not nil,
// is the session whose lane the caller runs on: the wait is then handed
// on to that lane (park), outside any concurrency slot, so other chats
// run meanwhile and the session's next work waits behind the reply.
// Without it (a resend on its own goroutine) the wait is made in place.
func (o *outbox) sendReply(ctx context.Context, a channels.Adapter, rp sessions.Reply, out channels.Outbound, lane *routing.Key) {
	o.sendFrom(ctx, a, rp, out, lane, 0)
}

// sendFrom is sendReply, waited already for rate limits in all.
func (o *outbox) sendFrom(ctx context.Context, a channels.Adapter, rp sessions.Reply, out channels.Outbound, lane *routing.Key, waited time.Duration) {
	d := o.d
	if lane != nil && o.behindParked(*lane, parkedReply{a: a, rp: rp, out: out}) {
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(d.life, cancel)()
	defer context.AfterFunc(o.stop, cancel)()
	if lane != nil {
		// The wait of a rate limit is parked off the concurrency slot
		// (below): the adapter returns the limit instead of waiting here.
		ctx = channels.ReturnRateLimits(ctx)
	}
	out.DeliveryID = rp.ID // one message per chunk, however often it is sent
	c, chunked := a.(channels.Chunker)
	ic, withIDs := a.(channels.IDChunker)
	var ids []string // platform ids of the chunks, for the message tool
	defer func() { d.tool.noteOwn(ctx, rp.AgentID, out, ids) }()
	for i := rp.Sent; i < len(rp.Chunks); i++ {
		if !leaseLive(ctx) {
			// This process was stopped past its session lease: another
			// replica may have taken the reply over; it sends the rest.
			d.log.Warn("reply chunks not sent: the session's lease was lost", zap.String("reply_id", rp.ID),
				zap.Int("chunk", i), zap.Int("chunks", len(rp.Chunks)))
			return
		}
		send := func() error {
			if mc, isMedia, err := channels.DecodeMediaChunk(rp.Chunks[i]); isMedia {
				if err != nil {
					return channels.Refusal(err) // a stored chunk that never decodes
				}
				got, err := o.sendMedia(ctx, a, out, i, mc)
				ids = append(ids, got...)
				return err
			}
			if withIDs {
				id, err := ic.SendChunkID(ctx, out, i, rp.Chunks[i])
				ids = append(ids, id)
				return err
			}
			if chunked {
				return c.SendChunk(ctx, out, i, rp.Chunks[i])
			}
			o := out
			o.Text = rp.Chunks[i]
			return a.Send(ctx, o)
		}
		err := send()
		// A rate limit the adapter did not wait out is waited out here,
		// within the budget; it is not a failed attempt. A refusal (the
		// platform answered that it will not post it: the bot blocked or
		// removed, the chat or topic gone) is final: asking again costs
		// requests and holds the lane for nothing.
		for r := 0; err != nil && ctx.Err() == nil; {
			if ra := max(channels.RetryAfter(err), 0); ra > 0 {
				ra = max(ra, time.Second)
				if waited+ra > rateLimitBudget {
					d.log.Warn("reply chunk rate limited past the outbox's budget", zap.String("channel", out.Channel),
						zap.String("chat_id", out.ChatID), zap.String("reply_id", rp.ID), zap.Int("chunk", i),
						zap.Duration("retry_after", ra), zap.Duration("waited", waited), zap.Duration("budget", rateLimitBudget))
					break
				}
				waited += ra
				d.log.Warn("reply chunk rate limited; waiting", zap.String("channel", out.Channel),
					zap.String("chat_id", out.ChatID), zap.String("reply_id", rp.ID), zap.Int("chunk", i),
					zap.Duration("retry_after", ra), zap.Bool("on_lane", lane != nil))
				if lane != nil {
					rp.Sent = i
					if o.park(*lane, parkedReply{a: a, rp: rp, out: out, waited: waited}, ra) {
						return
					}
				}
				if !rateLimitWait(ctx, ra) {
					break
				}
				err = send()
				continue
			}
			if refusedSend(err) || r == len(sendRetries) {
				break
			}
			d.log.Warn("reply chunk not delivered; retrying", zap.String("channel", out.Channel),
				zap.String("chat_id", out.ChatID), zap.Int("chunk", i), zap.Bool("outcome_known", channels.Answered(err)), zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(sendRetries[r]):
				if !channels.Answered(err) {
					// The failed attempt may have been posted.
					d.opts.Metrics.Uncertain.WithLabelValues(out.Channel, UncertainRetry).Inc()
				}
				err = send()
			}
			r++
		}
		if err != nil {
			if ctx.Err() != nil && d.closing.Load() {
				// Shutdown: the reply stays in the outbox for the next start.
				return
			}
			d.opts.Metrics.SendErrors.WithLabelValues(out.Channel).Inc()
			d.gaveUp(GiveUpSend)
			d.log.Error("reply not delivered; given up", zap.String("channel", out.Channel),
				zap.String("chat_id", out.ChatID), zap.String("reply_id", rp.ID),
				zap.Int("chunk", i), zap.Int("chunks", len(rp.Chunks)), zap.Error(err))
			d.buryReply(ctx, rp, i, "send: "+err.Error(), refusedRoom(err))
			o.sent(rp.ID, len(rp.Chunks))
			return
		}
		o.sent(rp.ID, i+1)
		d.traffic.outbound(out.Channel, out.AccountID, d.opts.Now())
	}
	d.opts.Metrics.Outbound.WithLabelValues(out.Channel).Inc()
	o.noteDelivered(ctx, rp, out.Address)
}

// sendMedia sends the media chunk mc (chunk i of out) through a's
// MediaSender, the files read from the dispatcher's media store. Files
// that cannot be sent (the store lost them, the channel sends no files,
// the platform refused them) become their text fallback, so the rest of
// the reply still goes out; a failure whose outcome is unknown, or a rate
// limit, is returned for the outbox's retries.
func (o *outbox) sendMedia(ctx context.Context, a channels.Adapter, out channels.Outbound, i int, mc channels.MediaChunk) ([]string, error) {
	d := o.d
	files, err := mc.Files(out)
	if err != nil {
		return nil, channels.Refusal(err)
	}
	ms, ok := a.(channels.MediaSender)
	var why string
	switch {
	case !ok || d.opts.Media == nil:
		why = "this chat takes no files from the gateway"
	case mc.Fallback == "":
		for _, f := range files {
			if !d.opts.Media.Has(f.SHA256) {
				why = "the file is no longer stored on this server"
				d.log.Error("reply file missing from the media store", zap.String("sha256", f.SHA256),
					zap.String("media_dir", d.opts.Media.Dir()))
				break
			}
		}
	}
	if why == "" {
		ids, err := ms.SendMedia(ctx, out, i, mc, d.openMedia)
		if err == nil || !channels.Answered(err) || channels.RetryAfter(err) > 0 {
			// Sent, unknown, or rate limited (the outbox waits it out and
			// sends the file again): not a refusal of the file.
			return ids, err
		}
		d.log.Warn("platform refused a reply's file; sending its text fallback", zap.String("channel", out.Channel),
			zap.String("chat_id", out.ChatID), zap.Int("chunk", i), zap.Error(err))
		why = "the platform refused it"
	}
	var notes []string
	for _, f := range files {
		notes = append(notes, channels.FallbackText(f, why))
	}
	if mc.Caption != "" {
		notes = append([]string{mc.Caption}, notes...)
	}
	fb := channels.MediaChunk{Group: mc.Group, Items: mc.Items, Fallback: strings.Join(notes, "\n")}
	if ok {
		return ms.SendMedia(ctx, out, i, fb, d.openMedia)
	}
	o2 := out
	o2.Text = fb.Fallback
	return nil, a.Send(ctx, o2)
}

// openMedia opens a reply's file in the media store.
func (d *Dispatcher) openMedia(m channels.OutMedia) (io.ReadCloser, error) {
	return d.opts.Media.Open(m.SHA256)
}

func (o *outbox) sent(id string, n int) {
	d := o.d
	if err := d.journal.Sent(id, n); err != nil {
		d.log.Error("outbox mark failed", zap.String("reply_id", id), zap.Error(err))
	}
}

// resend finishes a reply found in the outbox at start: only the chunks
// not yet marked are sent; the model is not run again. lane is the
// session whose lane the caller runs on, nil on a goroutine of its own
// (see sendReply).
func (o *outbox) resend(ctx context.Context, rp sessions.Reply, lane *routing.Key) {
	d := o.d
	var out channels.Outbound
	if err := json.Unmarshal(rp.Target, &out); err != nil {
		d.log.Error("outbox reply target unreadable; given up", zap.String("reply_id", rp.ID), zap.Error(err))
		d.gaveUp(GiveUpUnreadable)
		d.buryReply(ctx, rp, rp.Sent, "reply target unreadable: "+err.Error(), false)
		o.sent(rp.ID, len(rp.Chunks))
		return
	}
	a := d.adapter(out.Channel, out.AccountID)
	if a == nil {
		d.log.Error("outbox reply for a channel not configured; given up", zap.String("reply_id", rp.ID),
			zap.String("channel", out.Channel), zap.String("account_id", out.AccountID))
		d.gaveUp(GiveUpNoChannel)
		d.buryReply(ctx, rp, rp.Sent, fmt.Sprintf("channel %s account %s is not configured", out.Channel, out.AccountID), true)
		o.sent(rp.ID, len(rp.Chunks))
		return
	}
	d.opts.Metrics.Resent.Inc()
	if rp.Sent < len(rp.Chunks) {
		// The process that stored the reply may have posted its first
		// unmarked chunk before it died (the send window).
		d.opts.Metrics.Uncertain.WithLabelValues(out.Channel, UncertainResume).Inc()
	}
	d.log.Info("resuming reply from the outbox", zap.String("reply_id", rp.ID), zap.String("session_key", rp.SessionKey),
		zap.Int("sent", rp.Sent), zap.Int("chunks", len(rp.Chunks)))
	o.sendReply(ctx, a, rp, out, lane)
}
