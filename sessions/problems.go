package sessions

import (
	"context"
	"errors"
	"time"
)

// Problem is one finding of Check. It names no storage-specific type, so
// every backend reports in the same shape; Path says where in the
// backend's own terms (a file here).
type Problem struct {
	Code  string // one of the Code* constants
	Path  string // where the problem is (file, or a backend's locator)
	Agent string // the agent whose store it is in, if any
	Key   string // the session key it concerns, if any
	// SessionID is the session it concerns, if any: what a backend that
	// locates its data by session (postgres) repairs by.
	SessionID string
	Message   string // what is wrong, for a human
	Fix       string // what Repair does (or would do); empty when it needs a human
	Fixable   bool   // Repair can fix it

	// Plan is the repair the backend's Check made for it, run by the same
	// backend's Repair with its own state (nil: nothing to run); it re-reads
	// what it changes under the lock that guards it, so a problem fixed
	// meanwhile is left alone.
	Plan func(ctx context.Context, backend any) error `json:"-"`
}

// CheckOptions tunes Check and Repair.
type CheckOptions struct {
	// Now is the check's clock (zero: time.Now); archive names use it.
	Now time.Time
	// LockTimeout bounds the wait for a store lock during Repair (0: the
	// backend's default, e.g. filestore.DefaultLockTimeout).
	LockTimeout time.Duration
	// BacklogAfter is how old the oldest pending ingress record may be
	// before it is reported (0: 24 h).
	BacklogAfter time.Duration
	// Settle spares the counters of a transcript written within Settle
	// before Now: a running daemon adds a turn's counters after its rows
	// (the files backend coalesces them for up to a second, PostgreSQL
	// commits them in a later group), so a check beside it would report
	// the turn in flight as counter-lag. 0 judges every transcript (a
	// check of state no daemon writes); gateway doctor uses DefaultSettle.
	Settle time.Duration
}

// DefaultSettle is the Settle gateway doctor checks with: far above the
// daemon's counter flush (1 s on files, a group commit on PostgreSQL).
const DefaultSettle = 30 * time.Second

// Settling reports whether a transcript last written at lastAt is within
// o.Settle of o.Now, so its counters are not judged yet.
func (o CheckOptions) Settling(lastAt time.Time) bool {
	return o.Settle > 0 && !lastAt.IsZero() && lastAt.After(o.Now.Add(-o.Settle))
}

func (o CheckOptions) WithDefaults() CheckOptions {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.BacklogAfter <= 0 {
		o.BacklogAfter = 24 * time.Hour
	}
	return o
}

// ErrNotFixable is Repair's answer for a problem that needs a human.
var ErrNotFixable = errors.New("sessions: repair: needs a human")

// Problem codes: stable names `gateway doctor` prints and operators and
// tests match on. Never rename one; add new ones.
const (
	CodeIndexUnreadable   = "index-unreadable"    // the index does not parse
	CodeIndexForeign      = "index-foreign"       // the index is in a layout this version refuses (seed 000's)
	CodeMissingTranscript = "missing-transcript"  // an entry whose transcript is gone
	CodeOrphanTranscript  = "orphan-transcript"   // a transcript no entry points at
	CodeUnrenamedArchive  = "unrenamed-archive"   // archived, but the transcript kept its live name
	CodeCounterLag        = "counter-lag"         // entry counters behind the transcript
	CodeTranscriptBadLine = "transcript-bad-line" // a whole transcript line that does not parse
	CodeStaleLock         = "stale-lock"          // lock metadata left by a dead holder
	CodeLongHeldLock      = "long-held-lock"      // a live lock held past the max hold time
	CodeJournalDamaged    = "journal-damaged"     // ingress journal lines that do not parse
	CodeJournalBacklog    = "journal-backlog"     // ingress records waiting for more than a day
)
