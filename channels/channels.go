package channels

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ChatType is the kind of conversation a message came from.
type ChatType string

// Chat types. They match routing.PeerKind's spelling.
const (
	Direct  ChatType = "direct"
	Group   ChatType = "group"
	Channel ChatType = "channel"
)

// Inbound is one accepted chat message, normalised across channels.
type Inbound struct {
	// Address is the chat (and thread or topic) the message came from,
	// which is where replies go.
	Address
	// Agent is set by channels that address an agent explicitly (the web
	// API's /api/agents/{id}/chat); it overrides the bindings.
	Agent string
	// MessageID is unique per Channel+AccountID+ChatID; it is the dedupe key
	// for redeliveries.
	MessageID string
	ChatType  ChatType // direct, group or channel
	GuildID   string   // Discord guild, if any
	// ParentChatID is a Discord thread's parent channel, if known.
	ParentChatID string
	SenderID     string
	SenderName   string
	// Principal is who the per-sender limits bind when SenderID names a
	// conversation rather than a person (the web chat, whose SenderID is
	// the session's peer: channels.web.senderIdentity); empty: SenderID.
	Principal string `json:",omitempty"`
	// CaseSensitive says peer ids of this channel keep their case.
	CaseSensitive bool
	// Mentioned is true when the bot was mentioned or replied to, or in a DM.
	Mentioned bool
	// Text is the message text with the bot mention stripped (a caption
	// for media); media that cannot be fetched become placeholders such
	// as "[location ...]".
	Text string
	// Attachments are the message's files (photos, voice notes,
	// documents); the dispatcher fetches and turns them into model input.
	Attachments []Attachment `json:",omitempty"`
	// ReplyToID is the platform message id this message answers, if any.
	ReplyToID string
	Time      time.Time
	// Interaction is set for a native command (Discord slash command): the
	// reply goes back through it.
	Interaction *Interaction `json:",omitempty"`
	// Event is set when this is a reaction or an edit, not a new message
	// (events.go).
	Event *Event `json:",omitempty"`
	// Press marks a choice button press (choices.go): Text is the label
	// the gateway signed, MessageID the pressed message's; it is never
	// read as a command or a reset trigger.
	Press bool `json:",omitempty"`
	// PressAsked is when the pressed question's buttons were issued (the
	// minute their signed data carries; ChoiceIssued), zero when unknown:
	// the dispatcher refuses a press of a question asked before the
	// session was reset.
	PressAsked time.Time `json:",omitzero"`
	// Ambient marks the dispatcher's own batch of an ambient room's
	// unaddressed messages (never set by an adapter): its turn answers
	// only through the message tool, and otherwise sends nothing.
	Ambient bool `json:",omitempty"`
}

// LimitSender is the sender the limits bind for in: its Principal, else
// its SenderID.
func (in Inbound) LimitSender() string {
	if in.Principal != "" {
		return in.Principal
	}
	return in.SenderID
}

// Outbound is a reply to deliver.
type Outbound struct {
	// Address is the chat (and thread or topic) the reply goes to.
	Address
	// ReplyToID asks the platform to show the reply as an answer to that message.
	ReplyToID string
	// ReplyToMode is the room's replyToMode (ReplyToFirst when empty): which
	// chunks of the reply quote ReplyToID (Outbound.Quotes).
	ReplyToMode string `json:",omitempty"`
	// Answers are the inbound message ids the reply answers (a merged turn
	// answers several); ReplyToID is one of them. Channels whose requests
	// wait for their reply (web) deliver it to each.
	Answers []string `json:",omitempty"`
	// Text is Markdown; adapters convert it to the platform's format and split it.
	Text string
	// Media are files sent after Text (media_out.go): by adapters that
	// implement MediaSender, as media chunks; by the web chat, with the
	// reply.
	Media []MediaGroup `json:",omitempty"`
	// SessionID and TokenEstimate describe the session the reply belongs to
	// (the web channel reports them in its done event).
	SessionID     string
	TokenEstimate int64
	// Failed marks a user-safe error notice rather than an agent reply.
	Failed bool
	// Interaction, copied from the inbound message, sends the reply through
	// the platform interaction it came from.
	Interaction *Interaction `json:",omitempty"`
	// Draft is the platform id of a draft (Drafter) that chunk 0 of the
	// reply replaces by an edit; empty sends every chunk as a new message.
	Draft string `json:",omitempty"`
	// DeliveryID is the outbox's id of the reply: every attempt to send
	// chunk i of one DeliveryID is meant to be one message. A platform
	// that deduplicates sends by a key (Discord's nonce) derives it from
	// (DeliveryID, i), so a resend after a lost answer, a restart or a
	// take-over posts nothing new. Empty: no such key.
	DeliveryID string `json:",omitempty"`
}

// Handler accepts one inbound message. A nil error means the message is
// durably accepted and the adapter may acknowledge it to the platform; an
// error means it was not, and the adapter must not acknowledge it (it will
// be redelivered). ErrRejected means "refused on purpose, acknowledge anyway".
type Handler func(ctx context.Context, in Inbound) error

// ErrRejected is returned by a Handler for a message that is refused on
// purpose (access policy, duplicate): acknowledge it and do not retry.
var ErrRejected = errors.New("message rejected")

// ErrDuplicate is returned by a Handler for a message whose id was
// accepted before (a redelivery, a client's retry): it wraps ErrRejected,
// so adapters that do not tell the two apart acknowledge it and move on.
var ErrDuplicate = fmt.Errorf("duplicate message: %w", ErrRejected)

// ErrUnavailable is wrapped by a Handler's error when the gateway cannot
// accept messages for now (its storage is full or failing): the message was
// not accepted; the platform or the client should retry later.
var ErrUnavailable = errors.New("gateway unavailable")

// Adapter is one channel account.
type Adapter interface {
	// Name is the channel name, e.g. "telegram".
	Name() string
	// AccountID is the account this adapter serves.
	AccountID() string
	// Run receives messages and calls h for each until ctx ends; it must
	// return when ctx is cancelled.
	Run(ctx context.Context, h Handler) error
	// Send delivers a reply. It may be called concurrently with Run and
	// with itself.
	Send(ctx context.Context, out Outbound) error
}

// Typer is implemented by adapters that can show a typing indicator.
type Typer interface {
	// Typing shows the indicator once; callers repeat it while a turn runs.
	Typing(ctx context.Context, out Outbound) error
}

// Notifier is implemented by adapters that can reply to a sender outside the
// agent flow (pairing codes, refusals), without going through a session.
type Notifier interface {
	Notify(ctx context.Context, out Outbound) error
}

// Streamer is implemented by adapters that show a reply while it is being
// generated (the web channel's SSE stream). ReplyToID identifies the inbound
// message the deltas answer.
type Streamer interface {
	Delta(ctx context.Context, out Outbound, text string)
}

// Chunker is implemented by adapters that deliver a long reply as several
// platform messages. The dispatcher stores the chunks durably before the
// first is sent and marks each once the platform accepted it, so a restart
// sends only the chunks not yet delivered (SPEC §3.7). Adapters without it
// get the whole text in one Send.
type Chunker interface {
	// Chunks splits out.Text into the messages SendChunk sends.
	Chunks(out Outbound) []string
	// SendChunk delivers chunk i of out, quoting out.ReplyToID when
	// out.Quotes(i). It retries what is safe to retry itself.
	SendChunk(ctx context.Context, out Outbound, i int, chunk string) error
}
