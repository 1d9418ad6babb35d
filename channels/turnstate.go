package channels

// TurnStatus is what durable state says of a turn a channel accepted.
type TurnStatus int

// Turn statuses (TurnState.Status).
const (
	// TurnUnknown: no turn took the message (never accepted, or its
	// session was reset or deleted since).
	TurnUnknown TurnStatus = iota
	// TurnPending: the message is accepted and its reply is not yet in
	// the transcript; the reply will be delivered (Adapter.Send) once its
	// turn ends, after a restart too.
	TurnPending
	// TurnAnswered: the reply is in the session's transcript.
	TurnAnswered
	// TurnEnded: the message was taken and finished without a reply of
	// its own (a failure that was announced, or answered together with a
	// later message): Text says which.
	TurnEnded
)

// TurnState is a turn's outcome read from durable state (the transcript and
// the ingress journal), so it holds after a restart: the web channel
// answers a client that reconnects for a reply with it.
type TurnState struct {
	Status TurnStatus
	// Text is the reply (TurnAnswered) or a user-safe notice (TurnEnded).
	Text string
	// SessionID is the session the turn belongs to (TurnAnswered, TurnEnded).
	SessionID string
	// TokenEstimate is the session's context size as the done event reports it.
	TokenEstimate int64
}
