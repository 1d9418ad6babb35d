package lanes

// This file fixes the exported API the rest of the daemon codes against.
// The implementation replaces the bodies and may split this file.

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Mode is a queue mode.
type Mode string

// Queue modes.
const (
	Collect   Mode = "collect"
	Followup  Mode = "followup"
	Steer     Mode = "steer"
	Interrupt Mode = "interrupt"
)

// Drop is the overflow policy when a key's queue reaches Cap.
type Drop string

// Drop policies.
const (
	DropSummarize Drop = "summarize"
	DropOld       Drop = "old"
	DropNew       Drop = "new"
)

// Settings are a key's queue settings.
type Settings struct {
	Mode     Mode
	Debounce time.Duration
	Cap      int
	Drop     Drop
}

// Class is a concurrency class with its own cap.
type Class string

// Classes.
const (
	ClassMain     Class = "main"
	ClassSubagent Class = "subagent"
)

// ErrFull is returned by Enqueue when drop=new rejects a message.
var ErrFull = errors.New("lanes: queue full")

// ErrClosed is returned by Enqueue after Shutdown began.
var ErrClosed = errors.New("lanes: queue closed")

// Item is one unit of work for a key.
type Item struct {
	ID string
	// Group separates messages that must never be merged into one batch
	// (different threads).
	Group   string
	Payload any
	At      time.Time
	// Summary is a one-line description used when drop=summarize drops it.
	Summary string
}

// Batch is what one run receives.
type Batch struct {
	Key   string
	Class Class
	Items []Item
	// Dropped holds one-line summaries of items dropped by drop=summarize.
	Dropped []string
	// Steer returns items that arrived for this key while the run was
	// active, in steer mode (the runner calls it before each model call).
	Steer func() []Item
}

// RunFunc runs one batch. ctx is cancelled by Cancel, by interrupt mode and
// at the end of the shutdown grace period.
type RunFunc func(ctx context.Context, b Batch)

// Options configures a Queue.
type Options struct {
	Caps     map[Class]int // default main 4, subagent 8
	Settings func(key string) Settings
	Run      RunFunc
	Logger   *zap.Logger
	// OnWait is called with the time a batch waited for a slot (metrics).
	OnWait func(class Class, d time.Duration)
}

// Queue is the lane scheduler.
type Queue struct{}

// New returns a Queue ready for Enqueue.
func New(opts Options) *Queue { return &Queue{} }

// Enqueue adds an item for key. It never blocks on a run.
func (q *Queue) Enqueue(key string, class Class, it Item) error { return ErrClosed }

// Cancel cancels key's active run and drops its queued items, returning them.
func (q *Queue) Cancel(key string) []Item { return nil }

// Do runs fn serialised with key's runs (for chat commands), waiting for
// the active run to end first; it does not take a global slot.
func (q *Queue) Do(ctx context.Context, key string, fn func(ctx context.Context)) error {
	return ErrClosed
}

// Depth returns how many items wait for key.
func (q *Queue) Depth(key string) int { return 0 }

// Shutdown stops accepting work, waits for active runs until ctx ends, then
// cancels them. Items still queued are returned (they are durable elsewhere).
func (q *Queue) Shutdown(ctx context.Context) []Item { return nil }
