package lanes

import "time"

// Mode is a queue mode: what happens to items that arrive for a key while
// it is busy.
type Mode string

// Queue modes.
const (
	// Collect merges the items queued behind a run into one batch per
	// Group, after a quiet window of Settings.Debounce since the last arrival.
	Collect Mode = "collect"
	// Followup runs one batch per queued item, in arrival order.
	Followup Mode = "followup"
	// Steer hands items to the active run through Batch.Steer; those not
	// taken when the run ends run as one batch per Group.
	Steer Mode = "steer"
	// Interrupt cancels the active run and runs the newest item; older
	// queued items are dropped and reported in Batch.Dropped.
	Interrupt Mode = "interrupt"
	// SteerBacklog hands items to the active run through Batch.Steer, as
	// Steer does, and keeps them queued too (marked Item.Steered): they run
	// again afterwards, one batch per Group, for a turn of their own.
	SteerBacklog Mode = "steer-backlog"
	// FIFO runs one batch per item in arrival order, with no quiet window
	// and nothing merged ("queue" in the configuration): Followup, for
	// owners that also hold messages back to merge them (bursts), told
	// not to.
	FIFO Mode = "queue"
)

// steerBacklogAlias is the reference system's other spelling of
// SteerBacklog, read from imported state.
const steerBacklogAlias = "steer+backlog"

// Drop is the overflow policy when a key's queue reaches Settings.Cap.
type Drop string

// Drop policies.
const (
	// DropSummarize drops the oldest queued item into Batch.Dropped of the
	// next batch (whose run summarises it).
	DropSummarize Drop = "summarize"
	// DropOld drops the oldest queued item silently.
	DropOld Drop = "old"
	// DropNew rejects the new item: Enqueue returns ErrFull.
	DropNew Drop = "new"
)

// Defaults applied to zero-valued Settings fields.
const (
	DefaultMode     = Collect
	DefaultDebounce = time.Second
	DefaultCap      = 20
	DefaultDrop     = DropSummarize
)

// Settings are a key's queue settings. Zero fields take the defaults
// (collect, 1 s, 20, summarize); a negative Debounce means no quiet window.
type Settings struct {
	Mode     Mode
	Debounce time.Duration
	Cap      int
	Drop     Drop
}

// DefaultSettings returns the settings used when Options.Settings is nil.
func DefaultSettings() Settings {
	return Settings{Mode: DefaultMode, Debounce: DefaultDebounce, Cap: DefaultCap, Drop: DefaultDrop}
}

// normalized fills defaults and maps unknown values to them, so the
// scheduler only ever sees valid settings.
func (s Settings) normalized() Settings {
	switch s.Mode {
	case Collect, Followup, Steer, Interrupt, SteerBacklog, FIFO:
	case steerBacklogAlias:
		s.Mode = SteerBacklog
	default:
		s.Mode = DefaultMode
	}
	switch {
	case s.Debounce == 0:
		s.Debounce = DefaultDebounce
	case s.Debounce < 0:
		s.Debounce = 0
	}
	if s.Cap <= 0 {
		s.Cap = DefaultCap
	}
	switch s.Drop {
	case DropSummarize, DropOld, DropNew:
	default:
		s.Drop = DefaultDrop
	}
	return s
}

// Modes lists the queue modes, as a configuration or a command names them.
var Modes = []Mode{Collect, Followup, Steer, Interrupt, SteerBacklog, FIFO}

// ParseMode reads a mode as a configuration, a command or imported state
// spells it ("steer+backlog" too); false for anything else.
func ParseMode(s string) (Mode, bool) {
	if s == steerBacklogAlias {
		return SteerBacklog, true
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, true
		}
	}
	return "", false
}
