package sessions

import (
	"context"
	"errors"
	"time"
)

// Per-session serialisation across processes (SPEC §3.8, issue 13). In one
// process the lanes run one turn at a time per session; when several
// processes share a backend (PostgreSQL replicas), each turn also runs
// under the session's lease, taken by Turns.BeginTurn, and every write the
// turn makes carries the lease's fencing token (WithFence): a process that
// paused (SIGSTOP, a long GC, a partition) and lost the lease to another
// cannot write with its old token.

// ErrFenced is wrapped by the errors of writes refused because the turn's
// lease moved on (expired, or another process took it): the turn must
// stop without writing or sending anything more.
var ErrFenced = errors.New("session lease lost")

// Fence is the lease a turn runs under: its name and fencing token.
type Fence struct {
	Lease string
	Token int64
	// Live, when set, reports whether the lease is surely still held by
	// this process's clock (false once it may have run out unrenewed: the
	// process was stopped, or the backend did not answer). A side effect
	// outside the backend (sending a reply chunk) waits for it.
	Live func() bool `json:"-"`
}

type fenceKey struct{}

// WithFence returns ctx carrying f: the backend checks it on every write
// made with that context.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the fence ctx carries, if any.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok && f.Lease != ""
}

// Turns is implemented by a Delivery that several processes share (the
// PostgreSQL backend): a turn for a session begins only when this process
// may run it. The files backend has none: one process per state
// directory, and the lanes serialise its turns.
type Turns interface {
	// BeginTurn asks to run a turn for sessionKey of agentID over the
	// records ids (this process's, accepted or taken over). Gone lists the
	// ids that are no longer this process's to run (another took them
	// over, or they finished, or a reply answers them): the caller drops
	// them. Held is false while another
	// process runs the session, or holds an older pending record of it
	// (per-session order): the caller waits (WaitTurn) and asks again.
	// With Held, the caller runs the turn with the hold's fence and calls
	// End when done; the ids in Later wait: another process holds a
	// message of the session accepted between them and the others, so
	// they run in a turn after that one (per-session order).
	BeginTurn(ctx context.Context, agentID, sessionKey string, ids []string) (*TurnHold, error)
	// WaitTurn returns when sessionKey's lease was released since the
	// last BeginTurn for it was sent (at once when that happened before
	// the call), or may have been (a release that could not be heard),
	// after d, or when ctx ends; the caller asks again. A turn waits for
	// the release of its own session only: waking every waiter on every
	// release cost each message a BeginTurn per waiting session, more
	// with more replicas (issue 21). d bounds the wait for what no
	// release announces (an expired lease, a reply taken over).
	WaitTurn(ctx context.Context, sessionKey string, d time.Duration)
}

// TurnHold is the outcome of Turns.BeginTurn.
type TurnHold struct {
	Held  bool
	Gone  []string
	Later []string
	// Behind (with Held false) says an older pending message of the
	// session is this process's but not in the batch (taken over from
	// another process, or requeued): the caller lets it run first (yields
	// its lane) and asks again.
	Behind bool
	// Order lists the batch's ids still this process's in accept order:
	// a lane may hold them out of it (a message requeued or yielded behind
	// a newer one), and the turn takes them in this order.
	Order []string
	// Fence goes into the context of every write of the turn.
	Fence Fence
	// Lost is closed when the lease is lost while held (its renewal was
	// refused, or could not reach the backend before it would expire): the
	// turn must stop; its writes are refused from then on.
	Lost <-chan struct{}
	// End stops renewing the lease and releases it; safe to call twice.
	End func()
}

// AcceptProbe is implemented by a journal whose Accept can fail after the
// record was stored (the connection to a database lost between the
// commit and its answer, or a deadline passed in between). Stored reports
// whether record id is stored, pending and this handle's to run, so the
// caller runs a message it could not tell was accepted instead of
// stranding it: a redelivery of that message is a duplicate by then.
type AcceptProbe interface {
	Stored(ctx context.Context, id string) (bool, error)
}
