package dispatch

import (
	"fmt"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// QueueConfig is messages.queue (SPEC §4, §9).
type QueueConfig struct {
	Mode      lanes.Mode             `mapstructure:"mode"`
	Debounce  time.Duration          `mapstructure:"debounce"`
	Cap       int                    `mapstructure:"cap"`
	Drop      lanes.Drop             `mapstructure:"drop"`
	ByChannel map[string]QueueConfig `mapstructure:"byChannel"`
}

// DefaultQueue returns the documented defaults.
func DefaultQueue() QueueConfig {
	return QueueConfig{Mode: lanes.Collect, Debounce: time.Second, Cap: 20, Drop: lanes.DropSummarize}
}

// Validate names the first bad key.
func (q QueueConfig) Validate() error {
	return q.validate("messages.queue")
}

func (q QueueConfig) validate(path string) error {
	if _, ok := lanes.ParseMode(string(q.Mode)); !ok && q.Mode != "" {
		return fmt.Errorf("%s.mode: %q is not collect, followup, steer, interrupt, steer-backlog or queue", path, q.Mode)
	}
	switch q.Drop {
	case "", lanes.DropSummarize, lanes.DropOld, lanes.DropNew:
	default:
		return fmt.Errorf("%s.drop: %q is not summarize, old or new", path, q.Drop)
	}
	if q.Debounce < 0 {
		return fmt.Errorf("%s.debounce: must not be negative", path)
	}
	if q.Cap < 0 {
		return fmt.Errorf("%s.cap: must not be negative", path)
	}
	for ch, sub := range q.ByChannel {
		if len(sub.ByChannel) > 0 {
			return fmt.Errorf("%s.byChannel.%s.byChannel: not allowed", path, ch)
		}
		if err := sub.validate(path + ".byChannel." + ch); err != nil {
			return err
		}
	}
	return nil
}

// sessionQueue is a session's /queue override.
type sessionQueue struct {
	Mode     string
	Debounce time.Duration
	Cap      int
	Drop     string
}

// settings merges q with the channel override and the session's override
// (precedence: session > byChannel > global).
func (q QueueConfig) settings(channel string, sq sessionQueue) lanes.Settings {
	s := lanes.Settings{Mode: q.Mode, Debounce: q.Debounce, Cap: q.Cap, Drop: q.Drop}
	if o, ok := q.ByChannel[channel]; ok {
		if o.Mode != "" {
			s.Mode = o.Mode
		}
		if o.Debounce != 0 {
			s.Debounce = o.Debounce
		}
		if o.Cap != 0 {
			s.Cap = o.Cap
		}
		if o.Drop != "" {
			s.Drop = o.Drop
		}
	}
	if sq.Mode != "" {
		s.Mode = lanes.Mode(sq.Mode)
	}
	if sq.Debounce > 0 {
		s.Debounce = sq.Debounce
	}
	if sq.Cap > 0 {
		s.Cap = sq.Cap
	}
	if sq.Drop != "" {
		s.Drop = lanes.Drop(sq.Drop)
	}
	d := DefaultQueue()
	if s.Mode == "" {
		s.Mode = d.Mode
	}
	if s.Debounce == 0 { // what the lanes apply for it: /queue and /status show that
		s.Debounce = d.Debounce
	}
	if s.Cap == 0 {
		s.Cap = d.Cap
	}
	if s.Drop == "" {
		s.Drop = d.Drop
	}
	return s
}

// Verdict is the access policy's answer for one inbound message.
type Verdict struct {
	Allow bool
	// Reply is sent back to the sender when the message is refused (a
	// pairing code, for example); empty sends nothing.
	Reply string
	// Privileged says the sender may run /new, /reset, /switch, /delete.
	Privileged bool
	// AskPlatform says a sender who is not Privileged is if the room's
	// adapter (channels.AdminChecker) reports them an administrator of the
	// room (commands.platformAdmins); asked only for a privileged command.
	AskPlatform bool
	Reason      string
	// Unaddressed marks a refusal only for want of a mention: the sender
	// and the room are allowed, so the room may keep it as history.
	Unaddressed bool
}

// Runtime is the hot-reloadable part of the dispatcher's configuration.
type Runtime struct {
	Resolver *routing.Resolver
	// Access decides whether a message may reach an agent. nil allows all.
	Access func(in channels.Inbound) Verdict
	// Admits asks again, without side effects, whether the policy admits
	// the sender and room of a message accepted earlier, before it reaches
	// an agent (revoked.go); reason names a refusal. nil admits all.
	Admits func(in channels.Inbound) (ok bool, reason string)
	Queue  QueueConfig
	Reset  sessions.ResetConfig
	// Inbound joins a sender's quick messages into one input (burst.go);
	// the zero value joins nothing.
	Inbound InboundConfig
	// Room resolves the configured behaviour of the room a message came
	// from (history, streaming, error policy, ...). nil gives every room
	// channels.DefaultRoom.
	Room func(in channels.Inbound) channels.Room
	// Media turns attachments into model input (media.go).
	Media Media
	// ConfigNames lists the configuration keys (access lists, room rules,
	// bindings) that name a chat of a channel account by its id: when a
	// chat moves to a new id (moved.go) the operator is told which to
	// update. nil names none.
	ConfigNames func(channel, accountID, chatID string) []string
}

// RoomFor returns the behaviour of in's room under rt.
func (rt *Runtime) RoomFor(in channels.Inbound) channels.Room {
	if rt == nil || rt.Room == nil {
		return channels.DefaultRoom(in.Channel)
	}
	return rt.Room(in)
}
