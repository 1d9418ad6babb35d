package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Dead letters (issue 25): an inbound message the dispatcher gave up
// (after MaxFailures failed turns or MaxDeaths process deaths) or a reply
// it could not deliver is kept here, with why and when, until an operator
// resubmits or discards it. The store is bounded: past its keep count the
// oldest failed letters are dropped (Bury reports how many); a letter
// being resubmitted is never dropped.
//
// Resubmitting runs the message (or sends the reply) once, whoever calls
// it how often: ClaimDeadLetter moves a letter from failed to
// resubmitting in one storage write that only one caller wins; the winner
// writes the work into the journal under an id derived from the letter's
// (so a repeat after a crash finds it there), then removes the letter in
// the resubmitting state. A letter left resubmitting by a process that
// died is finished at the next start before the journal is resumed.

// Dead letter kinds.
const (
	// DeadMessage is an inbound message given up: Record holds it.
	DeadMessage = "message"
	// DeadReply is a reply given up: Reply holds it, Sent the chunks
	// delivered before.
	DeadReply = "reply"
)

// Dead letter states.
const (
	DeadFailed       = "failed"       // kept for the operator
	DeadResubmitting = "resubmitting" // claimed by a resubmit that has not finished
)

// DefaultDeadLetterKeep is how many dead letters a store keeps by default
// (messages.delivery.deadLetters.keep).
const DefaultDeadLetterKeep = 1000

// DeadLetter is one given-up message or reply.
type DeadLetter struct {
	ID     string    `json:"id"`
	Kind   string    `json:"kind"`
	State  string    `json:"state"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// AgentID and SessionKey are where it belonged.
	AgentID    string `json:"agentId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// Record is the journal record of a DeadMessage, as it was given up.
	Record *Record `json:"record,omitempty"`
	// Reply is the outbox reply of a DeadReply, as it was given up.
	Reply *Reply `json:"reply,omitempty"`
}

// DeadLetters stores dead letters. Implementations are safe for
// concurrent use by goroutines and processes (filestore.DeadLetters,
// pgstore's).
type DeadLetters interface {
	// Bury stores dl in state failed (dl.State is ignored) and drops the
	// oldest failed letters beyond keep (DefaultDeadLetterKeep when <= 0;
	// resubmitting letters count but are never dropped), returning how
	// many it dropped. A letter with dl.ID already stored
	// is left as it is (a repeat after a crash).
	Bury(ctx context.Context, dl DeadLetter, keep int) (dropped int, err error)
	// DeadLetters lists the stored letters, newest first.
	DeadLetters(ctx context.Context) ([]DeadLetter, error)
	// ClaimDeadLetter moves letter id from failed to resubmitting and
	// returns it. A letter that is not failed (another resubmit claimed
	// it) is ErrDeadLetterClaimed; no letter id is ErrNoDeadLetter.
	ClaimDeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// RemoveDeadLetter deletes letter id if it is in state (discard:
	// failed; a finished resubmit: resubmitting); otherwise
	// ErrNoDeadLetter or ErrDeadLetterClaimed as for ClaimDeadLetter.
	RemoveDeadLetter(ctx context.Context, id, state string) error
}

// Errors of DeadLetters.
var (
	ErrNoDeadLetter      = errors.New("no such dead letter")
	ErrDeadLetterClaimed = errors.New("dead letter already being resubmitted")
)

// CheckDeadLetter refuses a letter a store could not keep unchanged: an
// invalid id, an unknown kind, a kind without its body.
func CheckDeadLetter(dl DeadLetter) error {
	if err := CheckID("dead letter", dl.ID); err != nil {
		return err
	}
	switch {
	case dl.Kind == DeadMessage && dl.Record == nil:
		return fmt.Errorf("dead letter %q: a message without its record", dl.ID)
	case dl.Kind == DeadReply && dl.Reply == nil:
		return fmt.Errorf("dead letter %q: a reply without its reply", dl.ID)
	case dl.Kind != DeadMessage && dl.Kind != DeadReply:
		return fmt.Errorf("dead letter %q: unknown kind %q (want %s or %s)", dl.ID, dl.Kind, DeadMessage, DeadReply)
	}
	return nil
}

// ResubmitID is the journal id of the work resubmitting letter id: the
// record id (or reply id) the resubmit writes, the same at every repeat.
func ResubmitID(id string) string { return "dl-" + id }
