package channels

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
	// InheritParent seeds a new thread's or topic's session with its
	// parent's recent context.
	InheritParent bool
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
		Streaming: StreamOff, ErrorPolicy: ErrorsAlways, ReplyToMode: ReplyToFirst}
	switch channel {
	case "telegram":
		r.HistoryLimit = 50
	case "discord":
		r.HistoryLimit = 20
	}
	return r
}
