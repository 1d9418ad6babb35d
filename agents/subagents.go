package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

const spawnToolName = "sessions_spawn"

// Spawn statuses returned to the model.
const (
	SpawnAccepted  = "accepted"
	SpawnForbidden = "forbidden"
	SpawnError     = "error"
)

// Subagent end states announced to the parent.
const (
	ChildDone     = "done"
	ChildFailed   = "failed"
	ChildTimedOut = "timed out"
)

// maxRunTimeoutSeconds caps a child's runTimeoutSeconds (about 68 years:
// "no hurry"): more overflowed time.Duration into a negative timeout, the
// child timing out before it ran, and PostgreSQL's integer column.
const maxRunTimeoutSeconds = math.MaxInt32

type spawnArgs struct {
	Task              string `json:"task"`
	Label             string `json:"label"`
	AgentID           string `json:"agentId"`
	Model             string `json:"model"`
	RunTimeoutSeconds int    `json:"runTimeoutSeconds"`
	Cleanup           string `json:"cleanup"`
	Thinking          string `json:"thinking"`
}

// SpawnResult is the sessions_spawn tool result.
type SpawnResult struct {
	Status          string `json:"status"`
	ChildSessionKey string `json:"childSessionKey,omitempty"`
	RunID           string `json:"runId,omitempty"`
	// ModelApplied says the model asked for is the child's (seed 002);
	// Warning says why not, when one was asked for and is not configured:
	// the child then runs on its agent's model.
	ModelApplied bool   `json:"modelApplied"`
	Warning      string `json:"warning,omitempty"`
	Error        string `json:"error,omitempty"`
}

func newUUID() string { return uuid.NewString() }

func (r *Runner) spawnTool() tool {
	return tool{
		def: llm.Tool{
			Name: spawnToolName,
			Description: "Start a subagent that works on a task in its own session, in the background. " +
				"Returns at once; the subagent's result arrives later as a message in this session.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"task":{"type":"string","description":"what the subagent should do, self-contained"},` +
				`"label":{"type":"string","description":"short name for the run"},` +
				`"agentId":{"type":"string","description":"agent to run (default: this agent)"},` +
				`"model":{"type":"string","description":"provider/model override"},` +
				`"runTimeoutSeconds":{"type":"integer","minimum":1},` +
				`"cleanup":{"type":"string","enum":["keep","delete"],"description":"delete archives the child session once it has reported"},` +
				`"thinking":{"type":"string","enum":["off","low","medium","high"],"description":"the child's reasoning effort"}` +
				`},"required":["task"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			return r.spawn(ctx, s, raw)
		},
	}
}

func (r *Runner) spawn(ctx context.Context, s *session, raw json.RawMessage) (SpawnResult, error) {
	var a spawnArgs
	if err := decodeArgs(raw, &a); err != nil {
		return SpawnResult{Status: SpawnError, Error: err.Error()}, nil
	}
	if s.key.Subagent != "" {
		return SpawnResult{Status: SpawnForbidden, Error: "a subagent cannot start subagents"}, nil
	}
	if r.opts.Dispatch == nil {
		return SpawnResult{Status: SpawnForbidden, Error: "subagents are disabled"}, nil
	}
	a.Task = strings.TrimSpace(a.Task)
	if a.Task == "" {
		return SpawnResult{Status: SpawnError, Error: "task is required"}, nil
	}
	target := s.agent.ID
	if a.AgentID != "" {
		id, err := routing.NormalizeID(a.AgentID)
		if err != nil {
			return SpawnResult{Status: SpawnError, Error: "agentId is not an agent id"}, nil
		}
		target = id
	}
	if _, ok := r.agents[target]; !ok {
		return SpawnResult{Status: SpawnError, Error: fmt.Sprintf("unknown agent %q", target)}, nil
	}
	if target != s.agent.ID && !r.defaults.allows(target) {
		return SpawnResult{Status: SpawnForbidden, Error: fmt.Sprintf("agent %q is not in subagents.allowAgents", target)}, nil
	}
	var warning string
	if name, ok := r.OfferedModel(target, a.Model); ok {
		a.Model = name // as the config spells it
	} else if a.Model != "" {
		warning = fmt.Sprintf("model %q is not offered to agent %s (choices: %s); the subagent runs on its model",
			a.Model, target, strings.Join(r.Models(target), ", "))
		a.Model = ""
	}
	thinking, err := sessions.ParseThinking(a.Thinking)
	if err != nil {
		return SpawnResult{Status: SpawnError, Error: err.Error()}, nil
	}
	switch a.Cleanup {
	case "", sessions.CleanupKeep, sessions.CleanupDelete:
	default:
		return SpawnResult{Status: SpawnError, Error: "cleanup must be keep or delete"}, nil
	}
	if a.RunTimeoutSeconds < 0 {
		return SpawnResult{Status: SpawnError, Error: "runTimeoutSeconds must be positive"}, nil
	}
	a.RunTimeoutSeconds = min(a.RunTimeoutSeconds, maxRunTimeoutSeconds)
	runID := r.newID()
	child, err := routing.SubagentKey(target, runID)
	if err != nil {
		return SpawnResult{}, err
	}
	st, err := r.stores(target)
	if err != nil {
		return SpawnResult{}, err
	}
	label := strings.Join(strings.Fields(a.Label), " ") // one line, as PATCH requires of an operator's label
	title := label
	if title == "" {
		title = a.Task
	}
	parent := s.key.String()
	if _, _, err := st.Begin(ctx, child, sessions.Origin{ParentKey: parent, Title: title, At: r.now()}); err != nil {
		return SpawnResult{}, fmt.Errorf("create child session: %w", err)
	}
	if _, err := st.Patch(ctx, child, func(e *sessions.Entry) error {
		e.SpawnedBy, e.ParentSessionKey, e.Label = parent, parent, label
		e.ModelOverride, e.ThinkingLevel = a.Model, thinking
		// Durable with the child, so a restarted daemon still times its
		// run out and deletes it (runChild reads them from the entry).
		e.SubagentCleanup, e.RunTimeoutSeconds = a.Cleanup, a.RunTimeoutSeconds
		return nil
	}); err != nil {
		return SpawnResult{}, fmt.Errorf("record spawn: %w", err)
	}
	if err := r.opts.Dispatch(ctx, Dispatch{AgentID: target, Key: child, Parent: s.key, Subagent: true,
		Message: sessions.UserText(a.Task, r.now()), Deliver: false}); err != nil {
		s.log.Error("subagent dispatch failed", zap.String("child_session_key", child.String()), zap.Error(err))
		// Removed even when ctx is done (a /stop refused the child):
		// left, the session that never ran stayed listed.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropUnstartedTimeout)
		defer cancel()
		if derr := st.Delete(dctx, child); derr != nil {
			s.log.Warn("removing the unstarted child failed", zap.Error(derr))
		}
		return SpawnResult{Status: SpawnError, Error: "the subagent could not be queued"}, nil
	}
	s.log.Info("subagent spawned", zap.String("child_session_key", child.String()), zap.String("target_agent", target))
	return SpawnResult{Status: SpawnAccepted, ChildSessionKey: child.String(), RunID: runID,
		ModelApplied: a.Model != "", Warning: warning}, nil
}

// dropUnstartedTimeout bounds removing the session of a child that could
// not be queued.
const dropUnstartedTimeout = 10 * time.Second

// runChild runs a subagent turn under its run timeout and, when it ends
// (done, failed or timed out, but not when the daemon stops it), announces
// the result into the parent session through Dispatch, then deletes the
// child (cleanup delete) or clears its run's start. Everything it needs is
// in the child's entry — the parent (spawnedBy), the cleanup, the timeout
// and when the run began — so a child resumed after a restart still
// reports, is still deleted, and times out when it would have, counted
// from its first start. An announced end is the turn's outcome (a failure
// returned as a UserError, which the dispatcher does not run again); a
// storage failure, or an announcement that could not be made, returns the
// error with the child untouched, for the dispatcher to run it again.
func (r *Runner) runChild(ctx context.Context, s *session, t Turn) (Result, error) {
	timeout := r.defaults.turnTimeout()
	if s.entry.RunTimeoutSeconds > 0 {
		timeout = time.Duration(min(s.entry.RunTimeoutSeconds, maxRunTimeoutSeconds)) * time.Second
	}
	started, err := r.childStarted(ctx, s)
	if err != nil {
		return Result{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, started.Add(timeout).Sub(r.now()))
	res, err := r.run(rctx, s, t)
	timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded)
	cancel()
	if ctx.Err() != nil {
		if t.Stopped != nil && t.Stopped() {
			r.forgetChildStart(ctx, s) // a later run counts from its own start
		}
		return res, err // stopped or shutting down: no end state yet
	}
	if err != nil && !timedOut && sessions.IsStorage(err) {
		// The storage failed under the run: the dispatcher parks it and
		// runs it again once the storage writes, so the child has no end
		// state yet (announced now, the result of the run again would be
		// taken for a repeat of this announcement and never heard).
		return res, err
	}
	status, text := ChildDone, res.Text
	switch {
	case err != nil && timedOut:
		status, text = ChildTimedOut, fmt.Sprintf("The subagent did not finish within %s.", timeout)
		// The end state is the turn's outcome, not a failure for the
		// dispatcher to run again.
		err = userErr(text, err)
	case err != nil:
		status, text = ChildFailed, UserMessage(err)
		var ue *UserError
		if !errors.As(err, &ue) {
			err = userErr(text, err) // as above: announced, so final
		}
	}
	if s.entry.SpawnedBy != "" {
		if aerr := r.announce(ctx, s, status, text); aerr != nil {
			// Not announced: the dispatcher runs the turn again (a done
			// child's reply reused), so the child stays as it is, its
			// run's start too, until the parent has heard.
			s.log.Error("subagent announcement failed", zap.Error(aerr))
			return res, aerr
		}
	}
	if s.entry.SubagentCleanup == sessions.CleanupDelete {
		if derr := s.st.Delete(ctx, s.key); derr != nil {
			s.log.Warn("archiving the finished subagent failed", zap.Error(derr))
		}
	} else {
		r.forgetChildStart(ctx, s)
	}
	return res, err
}

// childUnopened announces into its parent that a child could not run at
// all (err from opening it): its agent was removed from the config, its
// model is not configured, its window is too small. Such a turn's record
// is finished without a reply, so unsaid the parent would wait for a
// result that never comes. Only a user error is final: a storage error is
// tried again by the dispatcher, and a child no longer stored (deleted
// after it reported) has nothing to say.
func (r *Runner) childUnopened(ctx context.Context, t Turn, err error) {
	var ue *UserError
	if !errors.As(err, &ue) {
		return
	}
	st, serr := r.stores(t.AgentID)
	if serr != nil {
		r.log.Warn("subagent could not run; its parent is not told", zap.String("session_key", t.Key.String()), zap.Error(serr))
		return
	}
	e, ok, gerr := st.Get(t.Key)
	if gerr != nil || !ok || e.SpawnedBy == "" {
		return
	}
	s := &session{key: t.Key, st: st, entry: e,
		log: r.log.With(zap.String("agent_id", t.AgentID), zap.String("session_key", t.Key.String()))}
	if aerr := r.announce(ctx, s, ChildFailed, ue.Msg); aerr != nil {
		s.log.Error("subagent announcement failed", zap.Error(aerr))
	}
}

// forgetChildStartTimeout bounds clearing a child's run start after a
// stop (the turn's own context is done by then).
const forgetChildStartTimeout = 10 * time.Second

// forgetChildStart clears the child's recorded run start (its run ended
// or was stopped for good). It is written even when ctx is done (a stop
// cancelled it), bounded by forgetChildStartTimeout; a failure is logged:
// the next run would count from the old start, as it did before.
func (r *Runner) forgetChildStart(ctx context.Context, s *session) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetChildStartTimeout)
	defer cancel()
	e, err := s.st.Patch(ctx, s.key, func(e *sessions.Entry) error { e.RunStartedAt = 0; return nil })
	if err != nil {
		s.log.Warn("clearing the subagent's run start failed", zap.Error(err))
		return
	}
	s.entry = e
}

// childStarted is when the child's current run began: read from its entry
// when the run was begun before (a restart resumes it), else now, recorded
// durably before the run so a restart counts its timeout from there.
func (r *Runner) childStarted(ctx context.Context, s *session) (time.Time, error) {
	if s.entry.RunStartedAt > 0 {
		return time.UnixMilli(s.entry.RunStartedAt), nil
	}
	now := r.now()
	e, err := s.st.Patch(ctx, s.key, func(e *sessions.Entry) error { e.RunStartedAt = now.UnixMilli(); return nil })
	if err != nil {
		return time.Time{}, fmt.Errorf("agents: record the subagent run's start: %w", err)
	}
	s.entry = e
	return now, nil
}

func (r *Runner) announce(ctx context.Context, s *session, status, text string) error {
	if r.opts.Dispatch == nil {
		return errors.New("agents: announce: no dispatcher")
	}
	parent, err := routing.Parse(s.entry.SpawnedBy)
	if err != nil {
		return fmt.Errorf("agents: announce: parent key: %w", err)
	}
	if strings.TrimSpace(text) == "" {
		text = "(no reply)"
	}
	text = cutResult(text, r.announceCap(parent))
	var b strings.Builder
	b.WriteString("[subagent result]\n")
	if s.entry.Label != "" {
		fmt.Fprintf(&b, "label: %s\n", s.entry.Label)
	}
	fmt.Fprintf(&b, "status: %s\nchildSessionKey: %s\nrunId: %s\n\n%s\n\n", status, s.key, s.key.Subagent, text)
	b.WriteString("This is the result of a subagent this session started. Tell the user what matters from it.")
	// One announcement per child: a run replayed after a crash (its
	// record still pending, its reply reused) announces under the same id,
	// which the journal takes once.
	err = r.opts.Dispatch(ctx, Dispatch{ID: "announce:" + s.key.String(), AgentID: parent.Agent, Key: parent, Subagent: false,
		Message: sessions.UserText(b.String(), r.now()), Deliver: true})
	if err != nil {
		return fmt.Errorf("agents: announce: %w", err)
	}
	s.log.Info("subagent result announced", zap.String("status", status), zap.String("parent_session_key", parent.String()))
	return nil
}

// announceWindowShare is the most of the parent's context window a
// child's result takes in its announcement.
const announceWindowShare = 0.25

// resultCutNote ends a result cut to fit its parent (%d: bytes left out).
const resultCutNote = "\n\n[… %d more bytes of the subagent's result were cut here: the whole result did not fit in this session's context window …]"

// announceCap is the most bytes of a child's result announced into
// parent: a share of the parent's context window. Whole, a result larger
// than the window was the parent's last user message, which no
// compaction leaves out: the parent's turn failed as too long and the
// result never reached the chat.
func (r *Runner) announceCap(parent routing.Key) int {
	a, ok := r.agents[parent.Agent]
	if !ok {
		a = Agent{ID: parent.Agent}
	}
	var e sessions.Entry
	if st, err := r.stores(parent.Agent); err == nil {
		e, _, _ = st.Get(parent) // unknown: the agent's model
	}
	w := r.windowOf(a, r.modelName(a, e))
	return int(llm.TextBytes(int64(float64(w) * announceWindowShare)))
}

// cutResult returns text cut to at most limit bytes (at a rune boundary)
// and marked as cut, or text itself when it fits.
func cutResult(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	keep := max(0, limit-len(resultCutNote))
	for keep > 0 && !utf8.RuneStart(text[keep]) {
		keep--
	}
	return text[:keep] + fmt.Sprintf(resultCutNote, len(text)-keep)
}
