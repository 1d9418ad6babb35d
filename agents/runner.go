package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/webfetch"
	"github.com/gateway/gateway/agents/websearch"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Options configures a Runner.
type Options struct {
	Sessions  sessions.Backend
	Providers map[string]llm.Provider // by provider name
	Defaults  Defaults
	Agents    []Agent
	Logger    *zap.Logger
	// Dispatch queues work on a lane (see Dispatch); nil disables subagents.
	Dispatch func(ctx context.Context, d Dispatch) error
	// Now is the clock (nil: time.Now); the circuit breaker reads it too.
	Now func() time.Time
	// Breaker is the per-provider circuit breaker (nil: NewBreaker with
	// the defaults and Now).
	Breaker *Breaker
	// Registerer takes gateway_model_fallbacks_total, gateway_tokens_total
	// and gateway_cost_usd_total (nil: not registered).
	Registerer prometheus.Registerer
	// Prices price assistant messages (see PricesFrom); nil: all cost 0.
	Prices Prices
	// ContextWindows are the models' own windows (ContextWindowsFrom,
	// window.go); nil: every model has its agent's window.
	ContextWindows ContextWindows
	// WebFetch serves the web_fetch tool (nil: webfetch.New with defaults).
	WebFetch *webfetch.Fetcher
	// WebSearch serves the web_search tool (nil: off; an agent whose
	// tools.allow names web_search is then refused).
	WebSearch *websearch.Searcher
	// MCP serves the MCP servers' tools (nil: none).
	MCP *mcp.Manager
	// Jobs are the schedule tool's settings (schedule_tool.go).
	Jobs JobOptions
	// Media is the outbound media store the message tool's send_media
	// copies files into (media_out.go); nil: the agents send no files.
	Media *mediastore.Store
}

// Dispatch asks the daemon to queue a message for a session's lane; the
// dispatcher provides it (agents cannot import lanes). Subagent runs use it
// with Subagent=true; announcements of a finished child into its parent use
// it with Subagent=false. Deliver says whether the resulting reply goes to
// the session's chat. The dispatcher journals it, so it survives a restart.
// ID, when set, makes it idempotent: work with an ID already journaled
// (pending, or done within the journal's retention) is not queued again —
// a child's run replayed after a crash announces its result once.
// Parent is the session that spawned a subagent (Subagent=true). ctx is
// the run that queues it (the parent's for a spawn, the child's for an
// announcement): the dispatcher refuses work whose session was stopped
// meanwhile (/stop), returning an error.
type Dispatch struct {
	ID       string
	AgentID  string
	Key      routing.Key
	Parent   routing.Key
	Subagent bool
	Message  sessions.Message
	Deliver  bool
}

// Runner runs turns. It is safe for concurrent use; callers run at most one
// turn (or Compact) at a time per session key.
type Runner struct {
	opts     Options
	defaults Defaults
	agents   map[string]Agent
	log      *zap.Logger
	now      func() time.Time
	stores   func(agentID string) (store, error)
	newID    func() string
	// breaker and fallbacks serve model fallbacks (fallback.go).
	breaker     *Breaker
	fallbacks   *prometheus.CounterVec
	fallbackUse fallbackUse // the same counts, for ProviderStatus
	fetch       *webfetch.Fetcher
	search      *websearch.Searcher // nil: web_search off
	// prices and usage serve cost accounting (usage.go).
	prices Prices
	usage  usageMetrics
	// windows are the models' own context windows (window.go).
	windows ContextWindows

	// memos keep what the sessions' turns can reuse (session_memo.go).
	memos memos
}

// NewRunner validates opts and returns a Runner.
func NewRunner(opts Options) (*Runner, error) {
	if opts.Sessions == nil {
		return nil, errors.New("agents: options: Sessions missing")
	}
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	r.stores = backendStores(opts.Sessions)
	return r, nil
}

func newRunner(opts Options) (r *Runner, err error) {
	d := opts.Defaults.WithDefaults()
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("agents: defaults: %w", err)
	}
	r = &Runner{opts: opts, defaults: d, agents: map[string]Agent{}, log: opts.Logger, now: opts.Now,
		newID: newUUID}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.breaker = opts.Breaker; r.breaker == nil {
		r.breaker = NewBreaker(0, 0, r.now)
	}
	if r.fallbacks, err = newFallbackCounter(opts.Registerer); err != nil {
		return nil, err
	}
	if r.usage, err = newUsageMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	r.prices = opts.Prices
	r.windows = opts.ContextWindows
	if err := CheckModels("defaults.model", d.Model, r.hasProvider); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	if r.fetch = opts.WebFetch; r.fetch == nil {
		r.fetch = webfetch.New(webfetch.Options{Logger: r.log})
	}
	r.search = opts.WebSearch
	if len(opts.Agents) == 0 {
		return nil, errors.New("agents: list: at least one agent is needed")
	}
	for i, a := range opts.Agents {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("agents: list[%d]: %w", i, err)
		}
		if r.search == nil && slices.Contains(a.Tools.Allow, webSearchToolName) {
			return nil, fmt.Errorf("agents: list[%d] (%s): tools.allow names web_search, but webSearch.provider is not set", i, a.ID)
		}
		if _, dup := r.agents[a.ID]; dup {
			return nil, fmt.Errorf("agents: list[%d]: duplicate id %q", i, a.ID)
		}
		if _, _, err := r.provider(r.modelName(a, sessions.Entry{})); err != nil {
			return nil, fmt.Errorf("agents: list[%d] (%s): %w", i, a.ID, err)
		}
		if err := CheckModels(fmt.Sprintf("list[%d].model", i), a.Model, r.hasProvider); err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
		r.agents[a.ID] = a
	}
	for _, a := range d.Subagents.AllowAgents {
		if _, ok := r.agents[a]; !ok && a != "*" {
			return nil, fmt.Errorf("agents: defaults.subagents.allowAgents: unknown agent %q", a)
		}
	}
	return r, nil
}

// Turn is one agent turn for a session whose entry exists (sessions.Index.Begin).
type Turn struct {
	AgentID string
	Key     routing.Key
	// Entry is the session's entry as the caller began it (Begin's
	// answer): the turn runs in that session without reading the entry
	// again. Nil: the runner reads it.
	Entry *sessions.Entry
	// Inputs are new user messages; the runner appends them to the
	// transcript first (then calls OnInputsAppended).
	Inputs           []sessions.Message
	OnInputsAppended func()
	// InputsIn, when it was taken (sessions.InputsAhead.Taken), says the
	// Inputs are in the transcript already: appended with Begin's touch,
	// the context after them read. The runner does not append them again.
	InputsIn *sessions.InputsAhead
	// Reuse says the caller found this turn's complete reply already in the
	// transcript (a restart after it was written, SPEC §3.7): the runner
	// returns it instead of calling the model again. Only with no Inputs.
	Reuse bool
	// Steer returns messages that arrived during the run (steer mode).
	Steer func() []sessions.Message
	// SystemPrompt is added after the agent's own system prompt for this
	// turn (a room's systemPrompt).
	SystemPrompt string
	OnDelta      func(text string)
	OnTool       func(name string, args json.RawMessage)
	// OnStep, if set, is told each model call, tool call and compaction.
	OnStep func(Step)
	// Room is the chat the turn answers, for the message tool (nil: none).
	Room Room
	// Speaker is who and where the turn answers, for the sender and room
	// memory scopes (nil: the agent scope only; memory.go).
	Speaker *Speaker
	// SteeredSpeaker, if set, is asked after Steer returned messages: who
	// the turn answers now (a message of another person steered in leaves
	// no one sender). The turn's memory scopes narrow to it from its next
	// model call (narrowMemory).
	SteeredSpeaker func() *Speaker
	// JobTarget is the chat the turn answers and its sender, where the
	// schedule tool's jobs go (nil: no chat, the tool refuses).
	JobTarget *sessions.JobTarget
	// Ambient says the turn reads room events nobody addressed to the
	// agent (ambient.go): the message tool is offered.
	Ambient bool
	// Model, if set, is the "provider/model" of this turn instead of the
	// session's (a room's ambientModel).
	Model string
	// Stopped, asked once the turn's context is done, says the run was
	// stopped for good (/stop, an interrupting message) rather than by a
	// shutdown or a lost lease, after which it resumes. A subagent
	// stopped for good forgets its run's start, so a later run counts its
	// timeout afresh. Nil: never stopped for good.
	Stopped func() bool
	// ReplyAhead, if set, is asked before the final answer is appended,
	// with the result the turn will return (EntryID still empty): what it
	// returns (nil: nothing) goes with that append's context, so that a
	// backend may store the reply in the append's transaction
	// (sessions.ReplyAhead).
	ReplyAhead func(Result) *sessions.ReplyAhead
}

// Result is the outcome of a turn.
type Result struct {
	SessionID     string
	Text          string // final assistant text
	TokenEstimate int64  // context tokens after the turn
	// EntryID is the transcript entry of the final assistant message.
	EntryID string
	// Model is the "provider/model" that gave the final answer: a
	// fallback's when the primary failed (fallback.go).
	Model string
	// Usage sums the usage and cost of the assistant messages this turn
	// appended (zero for a reused reply); set also when the turn failed
	// after a model call (usage.go).
	Usage sessions.Usage
	// AnsweredAt is the timestamp of the last assistant message the turn
	// appended (zero when none): with the session it names the turn in the
	// usage ledger.
	AnsweredAt time.Time
	// Media are the files the turn attached to its reply (the message
	// tool's send_media, media_out.go), in the order asked; they go out
	// after Text.
	Media []MediaSend
}

// modelName is the "provider/model" a session uses: its override while
// the config still offers it (Offers), else the agent's model.
func (r *Runner) modelName(a Agent, e sessions.Entry) string {
	switch {
	case e.ModelOverride != "" && r.offers(a, e.ModelFor()):
		return e.ModelFor()
	case a.Model.Primary != "":
		return a.Model.Primary
	}
	return r.defaults.Model.Primary
}

// provider splits "provider/model" and finds the provider.
func (r *Runner) provider(name string) (llm.Provider, string, error) {
	pname, model, err := SplitModel(name)
	if err != nil {
		return nil, "", fmt.Errorf("model: %w", err)
	}
	p, ok := r.opts.Providers[pname]
	if !ok {
		return nil, "", fmt.Errorf("model %q: no provider named %q", name, pname)
	}
	return p, model, nil
}

func (r *Runner) hasProvider(name string) bool {
	_, ok := r.opts.Providers[name]
	return ok
}

// Model returns the "provider/model" key's session of agentID uses (for /status).
func (r *Runner) Model(agentID string, e sessions.Entry) string {
	return r.modelName(r.agents[agentID], e)
}

// TakesImages reports whether the model a session of agentID uses takes
// image input (providers.<name>.visionModels).
func (r *Runner) TakesImages(agentID string, e sessions.Entry) bool {
	p, model, err := r.provider(r.modelName(r.agents[agentID], e))
	return err == nil && llm.Images(p, model)
}

// HasAgent reports whether agentID is a configured agent.
func (r *Runner) HasAgent(agentID string) bool {
	_, ok := r.agents[agentID]
	return ok
}

// HasModel reports whether name ("provider/model") names a configured provider.
func (r *Runner) HasModel(name string) bool {
	_, _, err := r.provider(name)
	return err == nil
}

// session is what one Run or Compact works on.
type session struct {
	agent Agent
	key   routing.Key
	st    store
	tr    transcript
	entry sessions.Entry
	// next is the context the last append left (contextAppender), for the
	// context read that follows it; nil: read it.
	next *sessions.Context
	// provider and model are the model calls go to: cands[cur].
	provider llm.Provider
	model    string // without the provider prefix
	cands    []candidate
	cur      int
	window   int64
	// turnWindow, when set, is the smaller window of this turn's own
	// model (Turn.Model, ambient.go): what is sent is pruned to it.
	turnWindow int64
	log        *zap.Logger
	room       Room // the turn's chat (message tool); nil outside a chat turn
	// memory holds the turn's memory scopes by kind (memory.go); nil:
	// the agent keeps no memory.
	memory map[string]sessions.MemoryScope
	// senderSealed: the sender's notes are written, not read, in this turn
	// (a group turn; memory.senderInGroups off).
	senderSealed bool
	jobs         *sessions.JobTarget // the turn's chat and sender (schedule tool); nil outside a chat turn
	// searches counts the turn's web_search calls (websearch_tool.go).
	searches int
	media    *turnMedia // the files the turn attaches (media_out.go); nil outside a chat turn
	// ambient: an ambient turn (ambient.go), offered the message tool.
	ambient bool
}

func (r *Runner) open(agentID string, key routing.Key) (*session, error) {
	return r.openEntry(agentID, key, nil)
}

// openEntry opens the session of key in entry e, or in the entry read
// from the store when e is nil.
func (r *Runner) openEntry(agentID string, key routing.Key, begun *sessions.Entry) (*session, error) {
	a, ok := r.agents[agentID]
	if !ok {
		return nil, userErr("This agent is not configured.", fmt.Errorf("unknown agent %q", agentID))
	}
	st, err := r.stores(agentID)
	if err != nil {
		return nil, fmt.Errorf("agents: open store %s: %w", agentID, err)
	}
	var e sessions.Entry
	if begun != nil {
		e = *begun
	} else if e, ok, err = st.Get(key); err != nil {
		return nil, fmt.Errorf("agents: get session %s: %w", key, err)
	} else if !ok {
		return nil, fmt.Errorf("agents: session %s: %w", key, sessions.ErrNotFound)
	}
	log := r.log.WithLazy(zap.String("agent_id", agentID), zap.String("session_key", key.String()))
	name := r.modelName(a, e)
	if e.ModelOverride != "" && name != e.ModelFor() {
		log.Info("session's model is no longer offered by the config; the agent's model runs",
			zap.String("model_override", e.ModelFor()), zap.String("model", name))
	}
	cands, err := r.candidates(r.modelChain(a, e), log)
	if err != nil {
		return nil, userErr("The model "+name+" is not configured. Use /new provider/model to pick another.", err)
	}
	tr, err := st.transcript(e)
	if err != nil {
		return nil, fmt.Errorf("agents: open transcript %s: %w", e.SessionID, err)
	}
	s := &session{agent: a, key: key, st: st, tr: tr, entry: e, provider: cands[0].provider, model: cands[0].model,
		cands: cands, window: r.windowOf(a, name), log: log}
	if s.window < MinContextWindow {
		return nil, userErr(fmt.Sprintf("The context window of %s for this agent (%d tokens) is too small; at least %d tokens are needed. Ask the operator to raise contextWindow.",
			name, s.window, MinContextWindow), fmt.Errorf("context window %d of %s below %d", s.window, name, MinContextWindow))
	}
	if s.window < WarnContextWindow {
		s.log.Warn("small context window", zap.Int64("context_window", s.window), zap.Int("recommended", WarnContextWindow))
	}
	return s, nil
}

// Run runs one turn to completion (tool loop included). Errors carry a
// UserError message where one can be shown in the chat.
func (r *Runner) Run(ctx context.Context, t Turn) (Result, error) {
	s, err := r.openEntry(t.AgentID, t.Key, t.Entry)
	if err != nil {
		if t.Key.Subagent != "" {
			r.childUnopened(ctx, t, err)
		}
		return Result{}, err
	}
	if t.Key.Subagent != "" {
		r.setMemory(s, nil)
		// A child's turn ends with its announcement, which may fail
		// after the answer was appended and run the turn again: its
		// reply is stored only once the turn's outcome is known.
		t.ReplyAhead = nil
		return r.runChild(ctx, s, t)
	}
	r.setMemory(s, t.Speaker)
	s.room, s.jobs, s.ambient = t.Room, t.JobTarget, t.Ambient
	if t.Room != nil {
		s.media = &turnMedia{}
	}
	if t.Model != "" {
		if err := r.useModel(s, t.Model); err != nil {
			return Result{}, err
		}
	}
	limit := r.defaults.turnTimeout()
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := r.run(rctx, s, t)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		s.log.Warn("turn stopped at the time limit", zap.Duration("limit", limit))
		err = userErr(fmt.Sprintf("The answer took longer than %s and was stopped. Please try again.", limit), err)
	}
	return res, err
}

func (r *Runner) run(ctx context.Context, s *session, t Turn) (Result, error) {
	res := Result{SessionID: s.entry.SessionID}
	memo := r.memos.take(s.entry.SessionID)
	defer r.memos.put(s.entry.SessionID, memo)
	sizes := &memo.sizes
	if _, c, in := t.InputsIn.Taken(); in && len(t.Inputs) > 0 {
		s.next = c // nil: read at the model call
		s.st.AddCounters(s.key, sessions.Counters{Messages: len(t.Inputs)})
	} else if len(t.Inputs) > 0 {
		if err := r.appendMessages(ctx, s, t.Inputs); err != nil {
			return res, err
		}
	}
	if t.OnInputsAppended != nil {
		t.OnInputsAppended()
	}
	tools := r.tools(ctx, s)
	mcpNotes := r.mcpInstructions(tools)
	memory := r.readMemory(ctx, s) // once per turn: the notes as the turn began
	overflowRetried := false
	var last sessions.Message
	for iter := 0; ; {
		if t.Steer != nil {
			if msgs := t.Steer(); len(msgs) > 0 {
				if err := r.appendMessages(ctx, s, msgs); err != nil {
					return res, err
				}
				if t.SteeredSpeaker != nil && r.narrowMemory(s, t.SteeredSpeaker()) {
					memory = r.readMemory(ctx, s)
				}
			}
		}
		c, err := s.context(ctx)
		if err != nil {
			return res, fmt.Errorf("agents: load context: %w", err)
		}
		if iter == 0 && t.Reuse && len(t.Inputs) == 0 && finished(c.Messages) {
			last = c.Messages[len(c.Messages)-1]
			res.Model = last.Provider + "/" + last.Model
			if s.media != nil {
				res.Media = mediaFromTranscript(c.Messages)
			}
			break
		}
		system := withRoomPrompt(withRoomPrompt(r.systemPrompt(s), t.SystemPrompt), mcpNotes)
		fixed := llm.EstimateText(system) + llm.EstimateText(memory)
		hist := sizes.weigh(c.Messages)
		if est := fixed + hist; est > r.compactAt(s.window) {
			t.step(Step{Kind: StepCompaction})
			if ok := r.compactLogged(ctx, s, "", CompactThreshold, est); ok {
				if c, err = s.tr.Context(ctx); err != nil {
					return res, fmt.Errorf("agents: load context: %w", err)
				}
				hist = sizes.weigh(c.Messages)
			}
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("agents: run: %w", ctx.Err())
		}
		send := s.sendWindow()
		budget := int64(float64(send)*r.defaults.MaxHistoryShare) - fixed
		msgs := pruneSized(c, budget, sizes, hist)
		if limit := r.compactAt(send) - fixed; hist > limit { // the pruned history is no larger
			msgs = fitToolResults(msgs, limit) // toolfit.go: the last turn's results
		}
		msgs = withMemory(msgs, memory)
		// Seed 004: never two turns of one role in a row (a reply appended
		// after a failed one, an announcement beside a reply); every tool
		// call answered (a turn stopped mid-tool left one without).
		req := llm.Request{Model: s.model, System: system, Messages: llm.MergeSameRole(llm.PairToolResults(msgs)), Tools: toolDefs(tools),
			Thinking: s.entry.ThinkingLevel, Memo: &memo.model}
		t.step(Step{Kind: StepModel, Iteration: iter + 1})
		msg, err := r.stream(ctx, s, req, sizes.hasImages(), t.OnDelta)
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("agents: model call: %w", ctx.Err())
			}
			if errors.Is(err, llm.ErrContextOverflow) && !overflowRetried {
				overflowRetried = true
				s.log.Warn("model reported a context overflow; compacting and retrying once")
				t.step(Step{Kind: StepCompaction})
				r.compactLogged(ctx, s, "", CompactOverflow, llm.EstimateRequest(req))
				continue
			}
			s.log.Error("model call failed", zap.Error(err))
			if errors.Is(err, llm.ErrContextOverflow) {
				return res, userErr("This conversation is too long for the model even after compacting. Start a new session with /new.", err)
			}
			return res, userErr("The model could not answer right now. Please try again in a moment.", err)
		}
		iter++
		msg = r.stamp(s, msg, req)
		addUsage(&res.Usage, *msg.Usage) // paid for even if the append fails
		calls := toolCalls(msg)
		actx := ctx
		if len(calls) == 0 && t.ReplyAhead != nil && msg.Usage.Input+msg.Usage.Output > 0 { // else the estimate is read after
			if a := t.ReplyAhead(r.answered(s, res, msg)); a != nil {
				actx = sessions.WithReplyAhead(ctx, a)
			}
		}
		id, err := r.appendAssistant(actx, s, msg)
		if err != nil {
			return res, err
		}
		res.EntryID, res.Model = id, msg.Provider+"/"+msg.Model
		res.AnsweredAt = time.UnixMilli(msg.Timestamp)
		last = msg
		res.TokenEstimate = msg.Usage.Input + msg.Usage.Output
		if len(calls) == 0 {
			break
		}
		for _, call := range calls {
			var result sessions.Message
			if msg.StopReason == llm.StopLength {
				// The output limit cut the answer: a call's arguments
				// may be incomplete (a JSON prefix, or none). Run none.
				result = r.cutShortResult(call)
			} else {
				if t.OnTool != nil {
					t.OnTool(call.Name, call.Arguments)
				}
				t.step(Step{Kind: StepTool, Tool: call.Name})
				result = r.runTool(ctx, s, tools, call)
			}
			if err := r.appendMessages(ctx, s, []sessions.Message{result}); err != nil {
				return res, err
			}
		}
		if iter >= r.defaults.MaxToolIterations {
			s.log.Warn("tool loop stopped at the iteration limit", zap.Int("iterations", iter))
			res.Text = strings.TrimSpace(last.Text() + fmt.Sprintf("\n\n(Stopped after %d tool steps.)", iter))
			res.Media = s.media.result()
			return res, nil
		}
	}
	res.Text = answerText(last)
	if len(res.Media) == 0 { // a reused reply's came from the transcript
		res.Media = s.media.result()
	}
	if res.TokenEstimate == 0 {
		if c, err := s.tr.Context(ctx); err == nil {
			res.TokenEstimate = sizes.weigh(c.Messages)
		}
	}
	return res, nil
}

// answerText is the reply's text of the final answer m.
func answerText(m sessions.Message) string {
	if text := m.Text(); m.StopReason != llm.StopRefusal || strings.TrimSpace(text) != "" {
		return text
	}
	return RefusalText
}

// answered is the result run returns once msg, the final answer (no
// tool calls), is appended, but its EntryID: what Turn.ReplyAhead is
// given before the append.
func (r *Runner) answered(s *session, res Result, msg sessions.Message) Result {
	res.EntryID = "" // an earlier answer's (one that called tools)
	res.Model = msg.Provider + "/" + msg.Model
	res.AnsweredAt = time.UnixMilli(msg.Timestamp)
	res.TokenEstimate = msg.Usage.Input + msg.Usage.Output
	res.Text = answerText(msg)
	res.Media = s.media.result()
	return res
}

// RefusalText is the reply to a turn whose model declined with no text
// (llm.StopRefusal): an empty reply is not sent, and the member would
// hear nothing.
const RefusalText = "The model declined to answer this message."

// finished reports whether msgs end with a complete assistant answer.
func finished(msgs []sessions.Message) bool {
	if len(msgs) == 0 {
		return false
	}
	m := msgs[len(msgs)-1]
	return m.Role == sessions.RoleAssistant && len(toolCalls(m)) == 0
}

// withRoomPrompt appends a room's prompt to the agent's.
func withRoomPrompt(system, room string) string {
	switch {
	case room == "":
		return system
	case system == "":
		return room
	}
	return system + "\n\n" + room
}

func (r *Runner) systemPrompt(s *session) string { return agentPrompt(s.agent, s.key) }

// agentPrompt is agent a's system prompt in session key: a subagent's gets
// the note that it works for another session.
func agentPrompt(a Agent, key routing.Key) string {
	if key.Subagent == "" {
		return a.SystemPrompt
	}
	note := "You are a subagent working on one task for another session. Do the task and reply with the result; " +
		"your final reply is reported back to the session that started you. You cannot start subagents."
	if a.SystemPrompt == "" {
		return note
	}
	return a.SystemPrompt + "\n\n" + note
}

// stamp fills what the provider may leave out; usage is estimated only
// when none was reported. It prices and counts the message (account).
func (r *Runner) stamp(s *session, m sessions.Message, req llm.Request) sessions.Message {
	m.Role = sessions.RoleAssistant
	if m.Provider == "" {
		m.Provider = s.provider.Name()
	}
	if m.Model == "" {
		m.Model = s.model
	}
	if m.Timestamp == 0 {
		m.Timestamp = r.now().UnixMilli()
	}
	if m.StopReason == "" {
		m.StopReason = llm.StopEnd
		if len(toolCalls(m)) > 0 {
			m.StopReason = llm.StopToolUse
		}
	}
	if m.Usage == nil {
		in, out := llm.EstimateRequest(req), llm.EstimateMessage(m)
		m.Usage = &sessions.Usage{Input: in, Output: out, TotalTokens: in + out}
	} else if m.Usage.TotalTokens == 0 {
		m.Usage.TotalTokens = m.Usage.Input + m.Usage.Output + m.Usage.CacheRead + m.Usage.CacheWrite
	}
	r.account(s.agent.ID, &m)
	return m
}

// appendMessages appends msgs lazily (the journal holds the inputs
// durably; the reply's append flushes them). A transcript that can read
// the context in the same step keeps it for the model call that follows.
func (r *Runner) appendMessages(ctx context.Context, s *session, msgs []sessions.Message) error {
	for i := range msgs {
		if msgs[i].Timestamp == 0 {
			msgs[i].Timestamp = r.now().UnixMilli()
		}
	}
	s.next = nil
	if ca, ok := s.tr.(contextAppender); ok {
		_, c, err := ca.AppendLazyContext(ctx, msgs...)
		if err != nil {
			return fmt.Errorf("agents: append to transcript: %w", err)
		}
		s.next = &c
	} else if _, err := s.tr.AppendLazy(ctx, msgs...); err != nil {
		return fmt.Errorf("agents: append to transcript: %w", err)
	}
	s.st.AddCounters(s.key, sessions.Counters{Messages: len(msgs)})
	return nil
}

// context is the context the model is sent next: the one the last
// append left, or read now.
func (s *session) context(ctx context.Context) (sessions.Context, error) {
	if c := s.next; c != nil {
		s.next = nil
		return *c, nil
	}
	return s.tr.Context(ctx)
}

func (r *Runner) appendAssistant(ctx context.Context, s *session, m sessions.Message) (string, error) {
	s.next = nil
	ids, err := s.tr.Append(ctx, m)
	if err != nil {
		return "", fmt.Errorf("agents: append to transcript: %w", err)
	}
	u := m.Usage
	s.st.AddCounters(s.key, sessions.Counters{
		InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.TotalTokens,
		ContextTokens: u.Input + u.Output, Messages: 1, Model: m.Model, Provider: m.Provider,
	})
	return ids[0], nil
}

func toolCalls(m sessions.Message) []sessions.Content {
	var out []sessions.Content
	for _, c := range m.Content {
		if c.Type == sessions.BlockToolCall {
			out = append(out, c)
		}
	}
	return out
}
