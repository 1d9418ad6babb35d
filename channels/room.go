package channels

import (
	"fmt"
	"strings"
)

// Streaming modes of a room's replies (streaming.mode).
const (
	StreamOff      = "off"      // the reply is sent when the turn ends
	StreamProgress = "progress" // one status message edited as the turn advances; the answer is a new message
	StreamPartial  = "partial"  // the answer is edited in place as it streams
)

// Error policies of a room (errorPolicy): how failed turns are announced.
const (
	ErrorsAlways = "always" // every failure is announced
	ErrorsOnce   = "once"   // one notice per failure streak
	ErrorsSilent = "silent" // failures are logged, never posted
)

// Reply threading of a room (replyToMode).
const (
	ReplyToFirst = "first" // the first chunk of a reply quotes the message it answers
	ReplyToAll   = "all"   // every chunk quotes it
	ReplyToOff   = "off"   // replies quote nothing
)

// Room is the behaviour configured for the room a message came from (a
// group, forum topic, Discord channel or thread, or a DM), already merged
// from the account's defaults, the group/guild entry and the topic/channel
// entry (the most specific wins). Adapters and the dispatcher read it; the
// configuration layer builds it (hot-reloaded).
type Room struct {
	// Configured is true when a groups/guilds entry matched (not only the
	// account defaults).
	Configured bool
	// Enabled false silences the bot in the room: nothing reaches an agent
	// and no history is kept.
	Enabled bool
	// AgentID, if set, sends the room's messages to that agent (above the
	// bindings).
	AgentID string
	// SystemPrompt is added to the agent's system prompt for this room.
	SystemPrompt string
	// RequireMention gates the room's messages on a mention or a reply to
	// the bot (groups only; DMs are always addressed).
	RequireMention bool
	// HistoryLimit is how many unmentioned messages the room keeps for the
	// next turn (0 disables); HistoryMaxBytes caps their total text.
	HistoryLimit    int
	HistoryMaxBytes int
	// Streaming is StreamOff, StreamProgress or StreamPartial.
	Streaming string
	// ErrorPolicy is ErrorsAlways, ErrorsOnce or ErrorsSilent.
	ErrorPolicy string
	// ReplyToMode is ReplyToFirst, ReplyToAll or ReplyToOff.
	ReplyToMode string
	// AckReaction, if set, is the emoji put on a message addressed to the
	// bot in a group while its turn runs (removed when it is answered).
	AckReaction string
	// AutoThread (Discord channels) opens a thread for a mention and
	// continues the conversation there.
	AutoThread bool
	// InheritParent is what a new thread's or topic's session takes
	// from its parent's (inherit.go): nothing, a digest or a fork.
	InheritParent Inherit
	// MentionByName counts the bot's display name (Namer) in a message as
	// a mention of the bot.
	MentionByName bool
	// Events says which reactions and edits of the room reach the agent
	// (events.go); the zero value hears none.
	Events EventsConfig
	// Ambient says whether and how the room's unaddressed messages reach
	// the agent as room events (ambient.go); off by default.
	Ambient AmbientConfig
}

// Defaults of Room that do not depend on the channel.
const (
	DefaultHistoryMaxBytes = 64 << 10
	MaxHistoryLimit        = 200
)

// DefaultRoom is the behaviour of a room with nothing configured on
// channel ("telegram", "discord", "web").
func DefaultRoom(channel string) Room {
	r := Room{Enabled: true, RequireMention: true, HistoryMaxBytes: DefaultHistoryMaxBytes,
		Streaming: StreamOff, ErrorPolicy: ErrorsAlways, ReplyToMode: ReplyToFirst, Ambient: DefaultAmbient()}
	switch channel {
	case "telegram":
		r.HistoryLimit = 50
	case "discord":
		r.HistoryLimit = 20
	}
	return r
}

// RoomConfig is what an operator may set for a room (a group, topic,
// guild, channel or thread entry); unset fields inherit from the enclosing
// level. It is decoded from YAML.
type RoomConfig struct {
	// AgentID sends the room's messages to this agent, above bindings.
	AgentID string `mapstructure:"agentId" json:"agentId,omitempty"`
	// SystemPrompt is added to the agent's system prompt in this room.
	SystemPrompt string `mapstructure:"systemPrompt" json:"systemPrompt,omitempty"`
	// RoomDefaults may also be set on the account, for all its rooms.
	RoomDefaults `mapstructure:",squash"`
	// AutoThread (Discord channels): a mention opens a thread.
	AutoThread *bool `mapstructure:"autoThread" json:"autoThread,omitempty"`
}

// RoomDefaults are the room settings an account may set for all its rooms.
type RoomDefaults struct {
	// HistoryLimit is how many unmentioned messages are kept for the next
	// turn (0 disables, at most MaxHistoryLimit).
	HistoryLimit *int `mapstructure:"historyLimit" json:"historyLimit,omitempty"`
	// Streaming sets how replies show progress.
	Streaming *StreamingConfig `mapstructure:"streaming" json:"streaming,omitempty"`
	// ErrorPolicy is always, once or silent.
	ErrorPolicy string `mapstructure:"errorPolicy" json:"errorPolicy,omitempty"`
	// ReplyToMode is first, all or off.
	ReplyToMode string `mapstructure:"replyToMode" json:"replyToMode,omitempty"`
	// AckReaction is an emoji put on an addressed message while its turn
	// runs ("" inherits; "off" disables an inherited one).
	AckReaction string `mapstructure:"ackReaction" json:"ackReaction,omitempty"`
	// MentionByName counts the bot's display name as a mention.
	MentionByName *bool `mapstructure:"mentionByName" json:"mentionByName,omitempty"`
	// Reactions (off, note, turn) and Edits (off, note, answer) say what
	// becomes of users' reactions to the bot's messages and edits of
	// messages the bot answered (events.go); "" inherits.
	Reactions string `mapstructure:"reactions" json:"reactions,omitempty"`
	Edits     string `mapstructure:"edits" json:"edits,omitempty"`
	// AmbientDefaults are ambient and its settings (ambient.go).
	AmbientDefaults `mapstructure:",squash"`
}

// StreamingConfig is streaming: {mode: off|progress|partial}.
type StreamingConfig struct {
	Mode string `mapstructure:"mode" json:"mode,omitempty"`
}

// Validate names the first bad key, prefixed with path ("groups.-100.").
func (c RoomConfig) Validate(path string) error {
	if c.AgentID != "" && strings.TrimSpace(c.AgentID) == "" {
		return fmt.Errorf("%sagentId: blank", path)
	}
	return c.RoomDefaults.Validate(path)
}

// Validate names the first bad key, prefixed with path.
func (c RoomDefaults) Validate(path string) error {
	if c.HistoryLimit != nil && (*c.HistoryLimit < 0 || *c.HistoryLimit > MaxHistoryLimit) {
		return fmt.Errorf("%shistoryLimit: %d is outside 0..%d", path, *c.HistoryLimit, MaxHistoryLimit)
	}
	if c.Streaming != nil {
		switch c.Streaming.Mode {
		case "", StreamOff, StreamProgress, StreamPartial:
		default:
			return fmt.Errorf("%sstreaming.mode: %q is not off, progress or partial", path, c.Streaming.Mode)
		}
	}
	switch c.ErrorPolicy {
	case "", ErrorsAlways, ErrorsOnce, ErrorsSilent:
	default:
		return fmt.Errorf("%serrorPolicy: %q is not always, once or silent", path, c.ErrorPolicy)
	}
	switch c.ReplyToMode {
	case "", ReplyToFirst, ReplyToAll, ReplyToOff:
	default:
		return fmt.Errorf("%sreplyToMode: %q is not first, all or off", path, c.ReplyToMode)
	}
	if len(c.AckReaction) > 32 || strings.ContainsAny(c.AckReaction, " \t\r\n") {
		return fmt.Errorf("%sackReaction: %q is not a single emoji", path, c.AckReaction)
	}
	if err := c.AmbientDefaults.validate(path); err != nil {
		return err
	}
	return c.validateEvents(path)
}

// Apply returns r with the fields c sets.
func (c RoomConfig) Apply(r Room) Room {
	if c.AgentID != "" {
		r.AgentID = strings.TrimSpace(c.AgentID)
	}
	if c.SystemPrompt != "" {
		r.SystemPrompt = c.SystemPrompt
	}
	if c.AutoThread != nil {
		r.AutoThread = *c.AutoThread
	}
	return c.RoomDefaults.Apply(r)
}

// Apply returns r with the fields c sets.
func (c RoomDefaults) Apply(r Room) Room {
	if c.HistoryLimit != nil {
		r.HistoryLimit = *c.HistoryLimit
	}
	if c.Streaming != nil && c.Streaming.Mode != "" {
		r.Streaming = c.Streaming.Mode
	}
	if c.ErrorPolicy != "" {
		r.ErrorPolicy = c.ErrorPolicy
	}
	if c.ReplyToMode != "" {
		r.ReplyToMode = c.ReplyToMode
	}
	switch c.AckReaction {
	case "":
	case "off":
		r.AckReaction = ""
	default:
		r.AckReaction = c.AckReaction
	}
	if c.MentionByName != nil {
		r.MentionByName = *c.MentionByName
	}
	r.Ambient = c.AmbientDefaults.apply(r.Ambient)
	return c.applyEvents(r)
}
