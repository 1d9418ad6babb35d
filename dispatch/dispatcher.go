package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Options wires a Dispatcher.
type Options struct {
	// Sessions is the durable state (the storage seam, any backend).
	Sessions sessions.Backend
	// StateDir is the daemon's state dir: downloaded media are kept under
	// <StateDir>/media whatever the storage backend.
	StateDir string
	Runner   *agents.Runner
	Caps     map[lanes.Class]int
	Logger   *zap.Logger
	Metrics  *Metrics
	// Providers are the configured provider names, used to tell
	// "/new openai/gpt-4o" (a model) from "/new hello" (a first message).
	Providers []string
	Now       func() time.Time
	// MaxFailures gives a message up after that many failed turns
	// (default 3); MaxDeaths after that many process deaths while its turn
	// ran (default 5). Either way its chat gets a short notice.
	MaxFailures int
	MaxDeaths   int
	// JobGivenUp, when set, is told of a scheduled job whose delivered
	// occurrence's reply was given up because the room refuses the bot
	// (the platform refused the send, the account is gone), so the job
	// can be disabled (jobs.go).
	JobGivenUp func(ctx context.Context, jobID, why string)
	// Jobs are the settings of /remind (remind_command.go).
	Jobs JobOptions
	// DeadLetterKeep bounds the dead letters kept (the oldest go past it;
	// default sessions.DefaultDeadLetterKeep).
	DeadLetterKeep int
	// Limits applies per-sender, per-room and per-agent limits and
	// budgets (limits.go); nil limits nothing.
	Limits *limits.Limiter
	// Choices signs the message tool's choice buttons (the adapters
	// verify presses with the same keys); nil: ask is unsupported.
	Choices *channels.ChoiceKeys
	// Media is the outbound media store the files of replies are read
	// from (media_out.go); nil: replies carry no files.
	Media *mediastore.Store
}

// Dispatcher routes inbound messages to agent turns and replies back.
type Dispatcher struct {
	opts    Options
	log     *zap.Logger
	rt      atomic.Pointer[Runtime]
	queue   *lanes.Queue[routing.Key]
	journal sessions.Delivery
	closing atomic.Bool
	hold    holder // inbound bursts being assembled (burst.go)
	// staging holds the records of adapters' batches waiting to be
	// accepted together, by *channels.Batch (accept_batch.go).
	staging sync.Map
	ambient ambientRooms // ambient rooms' batches being debounced (ambient.go)
	// life ends when the shutdown grace period does: it bounds deliveries,
	// which a lane's cancellation (/stop, interrupt) must not cut short.
	life context.Context
	kill context.CancelFunc
	// typingDrain overrides the const of that name when set (tests).
	typingDrain time.Duration
	// typingDelay overrides the const of that name when set, negative
	// for none (tests).
	typingDelay time.Duration
	gate        editGate // spaces streaming edits per chat
	// queues caches the sessions' own queue settings for the lanes
	// (queuecache.go).
	queues queueCache
	// outbox sends replies and owns the resends that cannot wait on a
	// lane; recovery resumes work left by a previous run, another replica
	// or an unsure journal write. Shutdown waits for their goroutines.
	outbox   *outbox
	recovery *recovery
	// fails settles work that reached no outcome (failures.go). The parts
	// below own no state: each is the dispatcher seen for one concern.
	fails   *failures
	later   later        // delayed retries, stopped by Shutdown (later.go)
	cmds    commander    // chat commands (commands.go)
	media   mediaFetcher // attachments (media.go)
	history roomHistory  // unaddressed room messages (roomhistory.go)
	leases  turnLeases   // session leases across replicas (turnlease.go)
	acks    acker        // the ack reaction (ack.go)
	tool    messageTool  // the message tool's room (message_room.go)
	// activations caches sessions' group activation (activation.go).
	activations activationCache
	// spawns are the subagents with work here by their parent, and the
	// gate ordering their queueing with /stop (spawns.go).
	spawns spawns
	// moves are the session keys whose session moved to another key
	// (moved.go).
	moves keyMoves
	// traffic and givenUp are read by Status (status.go): last messages
	// per account, and given-up counts by reason (*atomic.Int64 values).
	traffic traffic
	givenUp sync.Map

	mu       sync.RWMutex
	adapters map[channels.AccountKey]channels.Adapter // guarded by mu
}

// New builds a Dispatcher; call Register for each adapter, then Resume.
func New(opts Options, rt *Runtime) (*Dispatcher, error) {
	if opts.Sessions == nil || opts.Runner == nil {
		return nil, errors.New("dispatch: new: Sessions and Runner are required")
	}
	if opts.StateDir == "" {
		return nil, errors.New("dispatch: new: StateDir is required (downloaded media are kept under it)")
	}
	if rt == nil || rt.Resolver == nil {
		return nil, errors.New("dispatch: new: a Runtime with a Resolver is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 3
	}
	if opts.MaxDeaths <= 0 {
		opts.MaxDeaths = 5
	}
	if opts.DeadLetterKeep <= 0 {
		opts.DeadLetterKeep = sessions.DefaultDeadLetterKeep
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	life, kill := context.WithCancel(context.Background())
	d := &Dispatcher{
		life: life, kill: kill,
		opts:     opts,
		log:      opts.Logger,
		journal:  opts.Sessions.Journal(),
		adapters: map[channels.AccountKey]channels.Adapter{},
	}
	d.outbox, d.recovery, d.fails = newOutbox(d), newRecovery(d), &failures{d: d}
	d.cmds, d.media, d.history, d.leases = commander{d}, mediaFetcher{d}, roomHistory{d}, turnLeases{d}
	d.acks, d.tool = acker{d}, messageTool{d}
	d.moves.d = d
	d.SetRuntime(rt)
	d.queue = lanes.New(lanes.Options[routing.Key]{
		Caps:     opts.Caps,
		Settings: d.laneSettings,
		Run:      d.runBatch,
		Logger:   opts.Logger,
		OnDrop:   d.onDrop,
		OnWait: func(c lanes.Class, w time.Duration) {
			d.opts.Metrics.LaneWait.WithLabelValues(string(c)).Observe(w.Seconds())
		},
	})
	return d, nil
}

// SetRuntime swaps the hot-reloadable settings; the next message uses them.
func (d *Dispatcher) SetRuntime(rt *Runtime) {
	d.rt.Store(rt)
	d.opts.Sessions.SetReset(rt.Reset)
}

// Runtime returns the settings in force.
func (d *Dispatcher) Runtime() *Runtime { return d.rt.Load() }

// Register makes an adapter's Send reachable for replies.
func (d *Dispatcher) Register(a channels.Adapter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.adapters[channels.AccountOf(a)] = a
}

func (d *Dispatcher) adapter(channel, account string) channels.Adapter {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.adapters[channels.AccountKey{Channel: channel, AccountID: account}]
}

// RecordID is the journal and dedupe id of an inbound message.
func RecordID(in channels.Inbound) string {
	return channels.MessageRecordID(in.Address, in.MessageID) + eventRecordSuffix(in)
}

// Route resolves where in goes (exported for `gateway route` and tests).
func (d *Dispatcher) Route(in channels.Inbound) (routing.Route, error) {
	return d.rt.Load().Route(in)
}

// Resolve maps an inbound message to its route with r.
func Resolve(r *routing.Resolver, in channels.Inbound) (routing.Route, error) {
	ri := routing.Input{
		Channel:       in.Channel,
		AccountID:     in.AccountID,
		Kind:          routing.PeerKind(in.ChatType),
		PeerID:        in.ChatID,
		GuildID:       in.GuildID,
		ThreadID:      in.ThreadID,
		CaseSensitive: in.CaseSensitive,
	}
	if in.ChatType == channels.Direct {
		ri.PeerID = in.SenderID
	}
	if in.ThreadID != "" {
		ri.ThreadKind = routing.Thread
		if in.IsTopic {
			ri.ThreadKind = routing.Topic
		}
	}
	route, err := r.Resolve(ri)
	if err != nil || in.Agent == "" {
		return route, err
	}
	agent, err := routing.NormalizeID(in.Agent)
	if err != nil {
		return routing.Route{}, fmt.Errorf("routing: agent %q: %w", in.Agent, err)
	}
	route.AgentID, route.Key.Agent, route.ParentKey.Agent = agent, agent, agent
	route.Binding = "explicit"
	return route, nil
}

// Handle is the channels.Handler: it returns nil once in is durably
// accepted, channels.ErrRejected when it is refused on purpose.
func (d *Dispatcher) Handle(ctx context.Context, in channels.Inbound) error {
	if in.Event != nil && in.Event.Kind == channels.EventMoved { // the platform's, no message (moved.go)
		if d.closing.Load() {
			return errors.New("dispatch: shutting down")
		}
		d.flushStaged(ctx)
		return d.moved(ctx, d.rt.Load(), in)
	}
	m := d.opts.Metrics
	m.Inbound.WithLabelValues(in.Channel).Inc()
	d.traffic.inbound(in.Channel, in.AccountID, d.opts.Now())
	if d.closing.Load() {
		return errors.New("dispatch: shutting down")
	}
	rt := d.rt.Load()
	verdict := Verdict{Allow: true, Privileged: true}
	if rt.Access != nil {
		verdict = rt.Access(in)
	}
	if in.Event != nil { // a reaction or an edit (events.go)
		d.flushStaged(ctx)
		ev, handled, err := d.event(ctx, rt, in, verdict)
		if handled {
			return err
		}
		in, verdict = ev, Verdict{Allow: true, Privileged: verdict.Privileged}
	}
	if !verdict.Allow && verdict.Unaddressed && d.addressed(in) { // activation.go
		verdict.Allow, in.Mentioned = true, true
	}
	if !verdict.Allow && verdict.Unaddressed {
		if handled, err := d.history.keepUnaddressed(ctx, rt, in); handled {
			return err
		}
	}
	if !verdict.Allow {
		m.Refused.WithLabelValues(in.Channel).Inc()
		d.log.Log(refusedLevel(in), "message refused", zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID),
			zap.String("sender_id", in.SenderID), zap.String("reason", verdict.Reason))
		if verdict.Reply != "" {
			d.notify(ctx, in, verdict.Reply)
		}
		return channels.ErrRejected
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Attachments) == 0 {
		return channels.ErrRejected
	}
	route, err := rt.Route(in)
	if err != nil {
		d.log.Warn("message not routable", zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID), zap.Error(err))
		return channels.ErrRejected
	}
	if d.pressOfEarlierSession(in, route, rt.Reset) {
		return fmt.Errorf("dispatch: press: %w", channels.ErrChoiceExpired)
	}
	w := &work{RecordID: RecordID(in), AgentID: route.AgentID, Key: route.Key,
		chatMessage: chatMessage{In: in, AdmittedBy: rt}, recordState: recordState{AcceptedAt: d.opts.Now()}}
	if !in.Press { // a button's label is never a command
		w.Command, w.Args = parseCommand(in.Text, rt.Reset)
	}
	if needsPrivilege(w) && !verdict.Privileged && !d.cmds.platformAdmin(ctx, in, verdict) {
		d.notify(ctx, in, onlyAllowed(w.Command))
		return channels.ErrRejected
	}
	if w.Command == "stop" {
		d.flushStaged(ctx) // what came before it in its batch is queued first
		if d.stopRepeated(ctx, w) {
			m.Duplicates.WithLabelValues(in.Channel).Inc()
			return channels.ErrDuplicate
		}
		d.cmds.stop(ctx, w)
		return nil
	}
	if d.throttled(ctx, w) {
		return channels.ErrRejected
	}
	w.HistoryMark = d.history.mark(in)
	rec, err := w.inboundRecord()
	if err != nil {
		return err
	}
	if d.stage(ctx, w, rec) {
		return nil // accepted with the rest of its batch (accept_batch.go)
	}
	dup, err := d.accept(d.peekQueue(ctx, w), rec)
	return d.accepted(ctx, w, dup, err)
}

// accepted settles w after its record's accept answered dup, err: a
// refusal (the error Handle returns), a duplicate, or the work queued.
func (d *Dispatcher) accepted(ctx context.Context, w *work, dup bool, err error) error {
	in, m := w.In, d.opts.Metrics
	if err != nil || dup {
		d.releaseHolds(w)
		d.refundRate(w)
	}
	if err != nil {
		d.recovery.acceptFailed(w, err)
		if isStorage(err) {
			d.opts.Metrics.StorageErrors.Inc()
			d.log.Error("message refused: storage unavailable", zap.String("channel", in.Channel),
				zap.String("chat_id", in.ChatID), zap.Error(err))
			return fmt.Errorf("dispatch: journal: %w: %w", channels.ErrUnavailable, err)
		}
		return fmt.Errorf("dispatch: journal: %w", err)
	}
	if dup {
		m.Duplicates.WithLabelValues(in.Channel).Inc()
		return channels.ErrDuplicate
	}
	if d.recovery.accepted(w.RecordID) {
		d.admit(ctx, w)
	}
	return nil
}

func (d *Dispatcher) enqueue(ctx context.Context, w *work) {
	w.Key = w.Key.Canonical()      // one lane per session, however the key was built
	w.Key = d.moves.resolve(w.Key) // journaled before its chat moved (moved.go)
	// Once queued, w belongs to its lane item (whose turn may update its
	// key): only key is read below.
	key := w.Key
	d.indexChild(w) // /stop finds it by its parent (spawns.go)
	class := lanes.ClassMain
	if w.Key.IsSubagent() {
		class = lanes.ClassSubagent
	}
	summary := summaryLine(w)
	id := w.RecordID
	if w.Reply != nil {
		id = "reply:" + w.Reply.ID
	}
	// No Group: a lane is one session key, so its items are all of one
	// group already (threads and topics have keys of their own).
	err := d.queue.Enqueue(w.Key, class, lanes.Item{
		ID: id, Payload: w, At: d.opts.Now(), Summary: summary,
		// A replayed message is never steered into a running turn: its own
		// turn first checks what the transcript already holds of it. Nor
		// is internal work (a subagent's result): the steer path takes
		// chat messages, so a result was handed in as an empty one and
		// lost, and several whole results outgrew the window; each gets
		// a turn of its own once the running one ends (runItems).
		NoSteer: w.Command != "" || w.Reply != nil || w.Replayed || w.Agent != nil,
		// Nor does a command or a reply to resend interrupt the active run
		// in interrupt mode, or get superseded there by a newer message:
		// neither is a message for the model to answer instead (a /status
		// cancelled the turn it asked about, whose message then got no
		// answer; a queued /reset was dropped unsaid).
		// Internal work (a subagent's announcement into its parent) is
		// no chat message either: it waits for the turn it would cancel,
		// and a newer message does not supersede it. Nor does a replayed
		// message (queued again at start or after a failure): the
		// messages a crash left pending are replayed in a row, and each
		// cancelled the one before it, finished unanswered before the
		// model saw it, though nobody had sent anything newer.
		NoInterrupt: w.Command != "" || w.Reply != nil || w.Agent != nil || w.Replayed,
		// And a running command is not cancelled by a newer message
		// (interrupt mode): /compact cut short lost the compaction the
		// member asked for. /stop still stops it.
		NoCancel: w.Command != "",
		// Nor is a replayed message dropped by the queue's cap: its dead
		// turn may have appended it to the transcript, where the next turn
		// sees it unanswered, and the drop's summary would put it before
		// the model again (the Discord crash test: an input answered by
		// two replies). Nor internal work: it has no summary line for the
		// model (takeDropped), so a drop lost it.
		Keep: w.Replayed || w.Agent != nil,
	})
	switch {
	case errors.Is(err, lanes.ErrFull) && w.Reply != nil:
		d.outbox.goResend(ctx, *w.Reply) // never dropped: it answers messages already run
	case errors.Is(err, lanes.ErrFull):
		d.releaseHolds(expand(w)...)
		d.finish(recordIDs(expand(w))...)
		d.notify(ctx, w.In, "Too many messages are waiting; this one was not processed. Please try again shortly.")
	case err != nil:
		// Closed: the record stays pending in the journal and runs at next start.
		d.log.Info("message left for the next start", zap.Stringer("session_key", key), zap.Error(err))
	}
	depth := float64(d.queue.Depth(key))
	d.opts.Metrics.QueueDepth.Set(depth)
	d.opts.Metrics.QueueDepths.Observe(depth)
}

// MaxQueueDepth is the deepest session queue now (messages waiting behind
// a session's running turn), for gateway_queue_depth_max.
func (d *Dispatcher) MaxQueueDepth() int { return d.queue.MaxDepth() }

// finish marks journal records done (no reply), logging failures.
func (d *Dispatcher) finish(ids ...string) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		if strings.HasPrefix(id, "agent:") { // agent work: a child's task maybe
			d.spawns.done(id)
		}
	}
	if err := d.journal.Done(ids...); err != nil {
		d.log.Error("journal done failed", zap.Strings("record_ids", ids), zap.Error(err))
	}
}

// onDrop is the lanes drop hook: a message dropped by the queue policy
// (or by interrupt mode) is finished, never run after a restart; a web
// request waiting for it is told, and so is the sender of a command.
func (d *Dispatcher) onDrop(_ routing.Key, it lanes.Item) {
	w, ok := it.Payload.(*work)
	if !ok {
		return
	}
	if w.Reply != nil {
		d.outbox.goResend(context.Background(), *w.Reply)
		return
	}
	d.releaseHolds(expand(w)...)
	d.finish(recordIDs(expand(w))...)
	if w.Command != "" && w.In.Channel != "" {
		// No summary line carries a command to the model, and it gets no
		// turn: its sender is told, never left wondering.
		d.notify(d.life, w.In, fmt.Sprintf("Too many messages were waiting: /%s was not run. Please send it again.", w.Command))
		return
	}
	d.fails.release(context.Background(), expand(w), "Dropped: newer messages in this conversation replaced it.")
}

// laneSettings is the lanes' Settings: the queue settings of session k
// (its /queue override, its channel's, the global ones). The session's
// own are cached (queuecache.go).
func (d *Dispatcher) laneSettings(k routing.Key) lanes.Settings {
	rt := d.rt.Load()
	sq, ok, mark := d.queues.get(k)
	if !ok {
		if st, err := d.opts.Sessions.Store(k.Agent); err == nil {
			if e, _, err := st.Get(k); err == nil { // no entry yet: none of its own
				sq = queueOf(e)
				d.queues.noteRead(k, e, mark)
			}
		}
	}
	return rt.Queue.settings(k.Channel, sq)
}

// notify sends a short notice outside any session.
func (d *Dispatcher) notify(ctx context.Context, in channels.Inbound, text string) {
	a := d.adapter(in.Channel, in.AccountID)
	if a == nil {
		return
	}
	out := outboundFor(in)
	out.Text = text
	out.Failed = true
	var err error
	if n, ok := a.(channels.Notifier); ok {
		err = n.Notify(ctx, out)
	} else {
		err = a.Send(ctx, out)
	}
	if err != nil && ctx.Err() == nil {
		d.log.Warn("notice not delivered", zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID), zap.Error(err))
	}
}

func outboundFor(in channels.Inbound) channels.Outbound {
	return channels.Outbound{
		Address: in.Address, ReplyToID: in.MessageID,
		Interaction: in.Interaction,
	}
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// laneBatch is what one lane run receives: the items of one session key.
type laneBatch = lanes.Batch[routing.Key]
