package dispatch

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// newModel splits /new's arguments into a model and the rest. A first
// word that names one of /model's choices (any case) is the model, as the
// choice is written; one that names a configured provider but no choice
// is refused (refusal says so), so /new cannot reach a model the operator
// did not offer; any other first word starts the first message.
func (c commander) newModel(w *work) (model, rest, refusal string) {
	d := c.d
	// The model is the first word, whatever white space ends it: "/new
	// openai/gpt-4o" and the message may be on two lines.
	first, tail := cutWord(w.Args)
	if w.Command != "new" || !strings.Contains(first, "/") {
		return "", w.Args, ""
	}
	choices := d.opts.Runner.Models(w.AgentID)
	if name, ok := pickModel(choices, first); ok {
		return name, tail, ""
	}
	if isModel(d.opts.Providers, first) {
		return "", "", fmt.Sprintf("Unknown model %q: the session was not reset. Choices: %s.", firstLine(first, 60), strings.Join(choices, ", "))
	}
	return "", w.Args, ""
}

// reset runs /new and /reset. It reports whether it handed the command's
// record to the turn of the message that followed the command ("/new
// hello"), which then settles the record.
func (c commander) reset(ctx context.Context, w *work, b laneBatch, store sessions.AgentStore) (handed bool) {
	d := c.d
	model, rest, refusal := c.newModel(w)
	if refusal != "" {
		c.reply(ctx, w, refusal)
		return false
	}
	msg := "Started a new session."
	if model != "" {
		msg = "Started a new session with model " + model + "."
	}
	if !c.resetDone(w, store) {
		if _, err := store.Reset(ctx, w.Key, sessions.ResetOptions{Manual: true, Model: model, Reason: w.Command}); err != nil {
			d.log.Error("manual reset failed", zap.Stringer("session_key", w.Key), zap.Error(err))
			c.reply(ctx, w, "Sorry, the session could not be reset.")
			return false
		}
		d.opts.Metrics.Resets.WithLabelValues(ResetManual).Inc()
		d.history.clear(w.Key, d.log)
		if n := c.stopChildren(ctx, w.Key, nil); n > 0 {
			// Their results belonged to the conversation just ended: they
			// would arrive into the new session unasked.
			msg += fmt.Sprintf(" %d subagent(s) of the previous session stopped.", n)
		}
	}
	if rest == "" && len(w.In.Attachments) == 0 {
		c.reply(ctx, w, msg)
		return false
	}
	// What follows the trigger is the new session's first message: its
	// text, and the files of a message whose caption was the command.
	next := *w
	next.Command, next.Args = "", ""
	// The turn's reply answers the command's record.
	next.In.Text = rest
	d.runTurn(ctx, []*work{&next}, laneBatch{Key: b.Key, Class: b.Class})
	return true
}

// resetDone reports whether a replayed /new or /reset (journaled before a
// restart: the process died, or a shutdown cut its turn short) already
// reset its session: the session in force started after the command was
// accepted.
// Resetting again archived the session the first reset started, with the
// command's own message in it and what its turn had written, and stopped
// the subagents that turn had started.
func (c commander) resetDone(w *work, store sessions.AgentStore) bool {
	if !w.Replayed || w.AcceptedAt.IsZero() {
		return false
	}
	e, ok, err := store.Get(w.Key)
	return err == nil && ok && !e.SessionStartedAt.IsZero() && !e.SessionStartedAt.Before(w.AcceptedAt)
}
