package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The chat's control of its own session (issue 23): /model switches the
// model among the configured ones, /think sets the reasoning effort,
// /activation says whether a group session answers only when addressed
// or every admitted message. Each is kept in the session's entry (the
// next turn reads it) and shown by /status; "default" clears it. All three
// are privileged: in a group they change the shared session, so only the
// senders the policy privileges may run them.

// control runs /model, /think or /activation and returns the answer.
func (c commander) control(ctx context.Context, store sessions.AgentStore, w *work) string {
	e, _, err := store.Get(w.Key)
	if err != nil {
		c.d.log.Error("session unreadable", zap.Stringer("session_key", w.Key), zap.Error(err))
		return "Sorry, the session could not be read."
	}
	arg := strings.ToLower(strings.TrimSpace(w.Args))
	switch w.Command {
	case "model":
		return c.model(ctx, store, w, e, arg)
	case "think":
		return c.think(ctx, store, w, e, arg)
	default:
		return c.activation(ctx, store, w, e, arg)
	}
}

// clearsSetting reports an argument that returns a setting to its default.
func clearsSetting(arg string) bool { return arg == "default" || arg == "reset" }

func (c commander) model(ctx context.Context, store sessions.AgentStore, w *work, e sessions.Entry, arg string) string {
	r := c.d.opts.Runner
	choices := r.Models(w.AgentID)
	cur := r.Model(w.AgentID, e)
	if arg == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "Model: %s", orDash(cur))
		switch {
		case e.ModelOverride == "":
			b.WriteString(" (the agent's)")
		case !strings.EqualFold(cur, e.ModelFor()):
			fmt.Fprintf(&b, " (the agent's: this session's %s is no longer offered)", e.ModelFor())
		}
		b.WriteString("\nChoices:")
		for _, m := range choices {
			b.WriteString("\n• " + m)
			if m == cur {
				b.WriteString(" (current)")
			}
		}
		b.WriteString("\n/model <name> switches this session; /model default returns to the agent's model.")
		return b.String()
	}
	var name string
	if !clearsSetting(arg) {
		var ok bool
		if name, ok = pickModel(choices, arg); !ok {
			return fmt.Sprintf("Unknown model %q. Choices: %s.", firstLine(w.Args, 60), strings.Join(choices, ", "))
		}
	}
	if err := c.patch(ctx, store, w, func(e *sessions.Entry) {
		e.ModelOverride, e.ProviderOverride = name, ""
	}); err != nil {
		return "Sorry, the model could not be saved."
	}
	if name == "" {
		e.ModelOverride, e.ProviderOverride = "", ""
		return "Model: back to the agent's, " + orDash(r.Model(w.AgentID, e)) + "."
	}
	return "Model: " + name + " for this session from the next message."
}

// pickModel finds arg among choices: a whole "provider/model" name (any
// case), or a model name without its provider that only one choice has.
func pickModel(choices []string, arg string) (string, bool) {
	var found []string
	for _, m := range choices {
		if strings.EqualFold(m, arg) {
			return m, true
		}
		if _, model, ok := strings.Cut(m, "/"); ok && strings.EqualFold(model, arg) {
			found = append(found, m)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}

func (c commander) think(ctx context.Context, store sessions.AgentStore, w *work, e sessions.Entry, arg string) string {
	r := c.d.opts.Runner
	if arg == "" {
		return "Thinking: " + thinkingLabel(e.ThinkingLevel) + ". /think off|low|medium|high sets it; /think default returns to the model's own."
	}
	level := ""
	if !clearsSetting(arg) {
		var err error
		if level, err = sessions.ParseThinking(arg); err != nil {
			return "Usage: /think off|low|medium|high (or default)."
		}
		if !r.Thinks(w.AgentID, e) {
			return fmt.Sprintf("The model %s takes no reasoning effort setting.", orDash(r.Model(w.AgentID, e)))
		}
	}
	if err := c.patch(ctx, store, w, func(e *sessions.Entry) { e.ThinkingLevel = level }); err != nil {
		return "Sorry, the thinking level could not be saved."
	}
	return "Thinking: " + thinkingLabel(level) + " for this session from the next message."
}

func thinkingLabel(level string) string {
	if level == "" {
		return "the model's default"
	}
	return level
}

func (c commander) activation(ctx context.Context, store sessions.AgentStore, w *work, e sessions.Entry, arg string) string {
	if w.Key.Kind != routing.Group && w.Key.Kind != routing.Channel {
		return "/activation applies to group sessions only."
	}
	if arg == "" {
		return "Activation: " + c.activationLabel(w, e.GroupActivation) + ". /activation mention|always sets it; /activation default returns to the room's rule."
	}
	mode := ""
	if !clearsSetting(arg) {
		var err error
		if mode, err = sessions.ParseActivation(arg); err != nil {
			return "Usage: /activation mention|always (or default)."
		}
	}
	if err := c.patch(ctx, store, w, func(e *sessions.Entry) { e.GroupActivation = mode }); err != nil {
		return "Sorry, the activation could not be saved."
	}
	c.d.activations.forget(w.Key)
	switch mode {
	case sessions.ActivationAlways:
		return "Activation: always. I answer every message here that the room's rules admit."
	case sessions.ActivationMention:
		return "Activation: mention. I answer only when mentioned or replied to."
	}
	return "Activation: " + c.activationLabel(w, "") + "."
}

// activationLabel names a session's activation, the room's rule when it
// sets none.
func (c commander) activationLabel(w *work, mode string) string {
	if mode != "" {
		return mode
	}
	if c.d.rt.Load().RoomFor(w.In).RequireMention {
		return "the room's rule (mention)"
	}
	return "the room's rule (always)"
}

// patch changes the session's entry, creating it when the command is the
// chat's first message (a first message may well be /model).
func (c commander) patch(ctx context.Context, store sessions.AgentStore, w *work, fn func(*sessions.Entry)) error {
	change := func(e *sessions.Entry) error { fn(e); return nil }
	_, err := store.Patch(ctx, w.Key, change)
	if errors.Is(err, sessions.ErrNotFound) {
		o := originFor(w.In, w.Key)
		o.Title = "" // a command is no title
		if _, _, err = store.Begin(ctx, w.Key, o); err == nil {
			_, err = store.Patch(ctx, w.Key, change)
		}
	}
	if err != nil {
		c.d.log.Error("session setting not saved", zap.Stringer("session_key", w.Key), zap.String("command", w.Command), zap.Error(err))
	}
	return err
}

// controlStatus is /status's lines for the settings here: the thinking
// level, and a group session's activation.
func (c commander) controlStatus(w *work, e sessions.Entry) string {
	s := "\nThinking: " + thinkingLabel(e.ThinkingLevel)
	if w.Key.Kind == routing.Group || w.Key.Kind == routing.Channel {
		s += "\nActivation: " + c.activationLabel(w, e.GroupActivation)
	}
	return s
}
