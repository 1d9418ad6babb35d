package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// commander runs chat commands on their session's lane (SPEC §6.1): the
// session commands here, /new and /reset in reset_command.go, the
// archive's in archive.go, /usage in usage_command.go, /memory and
// /forget in memory_command.go; /stop runs at once, outside the lane
// (stop.go). It holds no state of its own.
type commander struct{ d *Dispatcher }

// knownCommand reports a command of the catalogue (channels.Commands).
func knownCommand(c string) bool {
	_, ok := channels.LookupCommand(c)
	return ok
}

// privilegedCommand reports a command only allowed senders may run in groups.
func privilegedCommand(c string) bool {
	cmd, ok := channels.LookupCommand(c)
	return ok && cmd.Privileged
}

// needsPrivilege reports whether w is a command only privileged senders
// may run in groups (Handle asks, and again after a reload: revoked.go).
func needsPrivilege(w *work) bool {
	return w.Command != "" && (privilegedCommand(w.Command) || privilegedRemind(w.Command, w.Args))
}

// onlyAllowed is the answer to a privileged command from a sender who
// may not run it.
func onlyAllowed(command string) string { return "Only allowed members can use /" + command + " here." }

// platformAdminTimeout bounds the adapter's answer to platformAdmin: the
// message's handling (and the adapter's receiving) waits for it.
const platformAdminTimeout = 5 * time.Second

// platformAdmin reports whether the sender of a privileged command in a
// group, not privileged by the policy, administers the room on the
// platform (verdict.AskPlatform, the room's adapter a
// channels.AdminChecker). An error counts as no, logged unless ctx ended.
func (c commander) platformAdmin(ctx context.Context, in channels.Inbound, verdict Verdict) bool {
	d := c.d
	if !verdict.AskPlatform || in.ChatType == channels.Direct {
		return false
	}
	ac, ok := d.adapter(in.Channel, in.AccountID).(channels.AdminChecker)
	if !ok {
		return false
	}
	actx, cancel := context.WithTimeout(ctx, platformAdminTimeout)
	defer cancel()
	admin, err := ac.IsAdmin(actx, in)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("platform admin lookup failed", zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID),
				zap.String("sender_id", in.SenderID), zap.Error(err))
		}
		return false
	}
	return admin
}

// parseCommand recognises reset triggers and chat commands (SPEC §3.6, §6.1).
func parseCommand(text string, rc sessions.ResetConfig) (cmd, args string) {
	t := strings.TrimSpace(text)
	if trig, rest, ok := sessions.MatchTrigger(rc, t); ok {
		name := strings.ToLower(strings.TrimPrefix(trig, "/"))
		if name != "new" {
			name = "reset"
		}
		return name, strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(t, "/") {
		return "", ""
	}
	word, rest := cutWord(t[1:])
	word = strings.ToLower(word)
	// /new and /reset are reset triggers: the operator's list
	// (session.resetTriggers) is the whole set, so an empty list or one
	// that names others leaves them plain messages for the agent.
	if !knownCommand(word) || word == "new" || word == "reset" {
		return "", ""
	}
	return word, rest
}

// cutWord splits s at its first run of white space of any kind (a tab, a
// newline or a non-breaking space from a mobile keyboard as much as a
// space): first is the word before it, rest what follows, trimmed.
func cutWord(s string) (first, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// CommandsFor is the command catalogue as the reset triggers rc leave it:
// /new and /reset are listed only while a trigger of that spelling is
// configured (resetTriggers: [] turns them off, so no menu offers them and
// /help does not list them). Adapters register it; /help lists it.
func CommandsFor(rc sessions.ResetConfig) []channels.Command {
	all := channels.Commands()
	out := make([]channels.Command, 0, len(all))
	for _, c := range all {
		if c.Name == "new" || c.Name == "reset" {
			if name, _ := parseCommand("/"+c.Name, rc); name != c.Name {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// run runs one chat command on the session's lane.
func (c commander) run(ctx context.Context, w *work, b laneBatch) {
	d := c.d
	// A command's record finishes with its answer, unless /new or /reset
	// handed it to the turn of the message that followed it ("/new
	// hello"): that turn settles it as it settles any message (left
	// pending for the next start when a shutdown cuts it short, kept for
	// the retry of a failure), so finishing it here lost the message.
	handed := false
	defer func() {
		if !handed {
			d.finish(w.RecordID)
		}
	}()
	// A command may change the session's queue settings (/queue, /new):
	// the next message reads them from its entry.
	defer d.queues.forget(w.Key)
	log := d.log.With(zap.Stringer("session_key", w.Key), zap.String("command", w.Command))
	store, err := d.opts.Sessions.Store(w.AgentID)
	if err != nil {
		log.Error("session store unavailable", zap.Error(err))
		c.reply(ctx, w, "Sorry, the session store is unavailable.")
		return
	}
	switch w.Command {
	case "new", "reset":
		handed = c.reset(ctx, w, b, store)
	case "compact":
		d.opts.Metrics.Compactions.Inc()
		err := d.opts.Runner.CompactFor(ctx, w.AgentID, w.Key, w.Args, speakerOf(w.In))
		switch {
		case errors.Is(err, agents.ErrNothingToCompact):
			c.reply(ctx, w, "Nothing to compact yet: there is no earlier history to summarise.")
			return
		case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled):
			// /stop: nothing was written (agents.Runner.CompactFor writes
			// a compaction whole or not at all).
			c.reply(ctx, w, "Compaction stopped: the conversation history is unchanged.")
			return
		case err != nil:
			log.Warn("compaction failed", zap.Error(err))
			c.reply(ctx, w, "Compaction failed: "+userSafe(err))
			return
		}
		c.reply(ctx, w, "Compacted the conversation history.")
	case "stop":
		// Journaled before a restart, its answer not yet stored: it
		// stopped what it could then; what was queued behind it was
		// accepted after it and runs.
		c.reply(ctx, w, "Stopped.")
	case "status":
		c.reply(ctx, w, c.status(store, w))
	case "queue":
		c.reply(ctx, w, c.queue(ctx, store, w))
	case "remind":
		c.reply(ctx, w, c.remind(ctx, w))
	case "help":
		c.reply(ctx, w, channels.HelpText(CommandsFor(d.rt.Load().Reset)))
	case "usage":
		c.reply(ctx, w, c.usage(ctx, store, w))
	case "memory", "forget":
		c.reply(ctx, w, c.memory(ctx, w))
	case "sessions", "switch", "history", "delete":
		c.reply(ctx, w, c.archive(ctx, store, w))
	case "model", "think", "activation":
		c.reply(ctx, w, c.control(ctx, store, w))
	default:
		c.reply(ctx, w, "Unknown command. /help lists them.")
	}
}

// reply answers a command through the outbox (the command's record
// finishes with it).
func (c commander) reply(ctx context.Context, w *work, text string) {
	d := c.d
	out := outboundFor(w.In)
	out.Text = text
	out.Answers = answers([]*work{w})
	if st, err := d.opts.Sessions.Store(w.AgentID); err == nil {
		if e, ok, _ := st.Get(w.Key); ok {
			out.SessionID = e.SessionID
		}
	}
	var ids []string
	if w.RecordID != "" {
		ids = []string{w.RecordID}
	}
	d.outbox.deliver(ctx, w.Key, w.AgentID, ids, out, "")
}

// isModel reports whether s is written "provider/model" with one of
// providers ("openai/gpt-4o"), whether or not /model offers that model.
func isModel(providers []string, s string) bool {
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return false
	}
	p, _, ok := strings.Cut(s, "/")
	if !ok {
		return false
	}
	for _, name := range providers {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	return false
}

func (c commander) status(store sessions.AgentStore, w *work) string {
	d := c.d
	e, ok, err := store.Get(w.Key)
	if err != nil || !ok {
		return fmt.Sprintf("Session %s has no messages yet.", w.Key)
	}
	// Model is the one turns start from; Answered by the one that gave the
	// last answer, a fallback's when the first failed (agents/fallback.go).
	model := d.opts.Runner.Model(w.AgentID, e)
	answered := e.Model
	if e.Provider != "" && e.Model != "" {
		answered = e.Provider + "/" + e.Model
	}
	s := d.laneSettings(w.Key)
	return fmt.Sprintf("Session: %s\nId: %s\nModel: %s\nAnswered by: %s\nTokens: in %d, out %d, context %s\nCompactions: %d\nMessages: %d\nQueue: %s (debounce %s, cap %d, drop %s)",
		e.SessionKey, e.SessionID, orDash(model), orDash(answered), e.InputTokens, e.OutputTokens,
		contextShare(e.ContextTokens, d.opts.Runner.ContextWindow(w.AgentID, e)),
		e.CompactionCount, e.MessageCount, s.Mode, s.Debounce, s.Cap, s.Drop) + c.controlStatus(w, e)
}

// contextShare renders the context in use as a count and a share of the
// model's window: "12400 of 200000 (6%)".
func contextShare(tokens, window int64) string {
	if window <= 0 {
		return strconv.FormatInt(tokens, 10)
	}
	return fmt.Sprintf("%d of %d (%d%%)", tokens, window, (tokens*100+window/2)/window)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c commander) queue(ctx context.Context, store sessions.AgentStore, w *work) string {
	d := c.d
	fields := strings.Fields(w.Args)
	if len(fields) == 0 {
		s := d.laneSettings(w.Key)
		return fmt.Sprintf("Queue: %s (debounce %s, cap %d, drop %s)", s.Mode, s.Debounce, s.Cap, s.Drop)
	}
	var mode, drop string
	var debounce time.Duration
	capN := 0
	reset := false
	for _, f := range fields {
		k, v, hasColon := strings.Cut(strings.ToLower(f), ":")
		switch {
		case !hasColon && isMode(k):
			m, _ := lanes.ParseMode(k)
			mode = string(m)
		case !hasColon && k == "reset":
			reset = true
		case k == "debounce":
			dv, err := time.ParseDuration(v)
			if err != nil || dv < time.Millisecond || dv > maxQueueDebounce {
				return "debounce: want a duration from 1ms to 1m, such as 1s or 500ms"
			}
			debounce = dv
		case k == "cap":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return "cap: want a number from 1 to 1000"
			}
			capN = n
		case k == "drop":
			if v != "summarize" && v != "old" && v != "new" {
				return "drop: want summarize, old or new"
			}
			drop = v
		default:
			return "Usage: /queue <collect|followup|steer|interrupt|steer-backlog|queue> [debounce:1s cap:20 drop:summarize|old|new] | /queue reset"
		}
	}
	patch := func(e *sessions.Entry) error {
		if reset {
			e.QueueMode, e.QueueDebounceMs, e.QueueCap, e.QueueDrop = "", 0, 0, ""
			return nil
		}
		if mode != "" {
			e.QueueMode = mode
		}
		if debounce > 0 {
			e.QueueDebounceMs = debounce.Milliseconds()
		}
		if capN > 0 {
			e.QueueCap = capN
		}
		if drop != "" {
			e.QueueDrop = drop
		}
		return nil
	}
	_, err := store.Patch(ctx, w.Key, patch)
	if errors.Is(err, sessions.ErrNotFound) {
		// The chat's first message: the setting needs a session to live in.
		// The title is left to the first real message.
		o := originFor(w.In, w.Key)
		o.Title = ""
		if _, _, err = store.Begin(ctx, w.Key, o); err == nil {
			_, err = store.Patch(ctx, w.Key, patch)
		}
	}
	if err != nil {
		d.log.Error("queue setting not saved", zap.Stringer("session_key", w.Key), zap.Error(err))
		return "Sorry, the queue setting could not be saved."
	}
	d.queues.forget(w.Key) // the answer reads the new settings, not the cached ones
	s := d.laneSettings(w.Key)
	return fmt.Sprintf("Queue set: %s (debounce %s, cap %d, drop %s)", s.Mode, s.Debounce, s.Cap, s.Drop)
}

// maxQueueDebounce bounds /queue's quiet window. Any member of a group may
// set it, and every message sent while a reply runs waits that long: a
// longer one (debounce:30h, or 10m for 10s) only silences the bot. The
// session's entry keeps whole milliseconds, the least /queue takes.
const maxQueueDebounce = time.Minute

// isMode reports whether s names a queue mode.
func isMode(s string) bool {
	_, ok := lanes.ParseMode(s)
	return ok
}
