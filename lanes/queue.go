package lanes

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Class is a concurrency class with its own cap on concurrent runs.
type Class string

// Classes.
const (
	ClassMain     Class = "main"
	ClassSubagent Class = "subagent"
)

// Default caps per class; a class without a cap uses DefaultMainCap.
const (
	DefaultMainCap     = 4
	DefaultSubagentCap = 8
)

// SlowWait is the slot wait past which a batch is logged.
const SlowWait = 2 * time.Second

// ErrFull is returned by Enqueue when drop=new rejects an item.
var ErrFull = errors.New("lanes: queue full")

// ErrClosed is returned by Enqueue, Do and Next after Shutdown began, and
// is the cause of a Next fn's context that Shutdown cancelled.
var ErrClosed = errors.New("lanes: queue closed")

// ErrCancelled is the cause (context.Cause) of a run's context, and of a
// Next fn's, cancelled by Cancel or by interrupt mode: stopped for good,
// not by Shutdown (whose cancellation leaves the work for the next start).
var ErrCancelled = errors.New("lanes: run cancelled")

// Item is one unit of work for a key.
type Item struct {
	ID string
	// Group separates items that must never be merged into one batch
	// (different threads).
	Group   string
	Payload any
	// At is the arrival time; Enqueue sets it when zero.
	At time.Time
	// Summary is a one-line description of the item, for the owner's use
	// when it is dropped with a summary (drop=summarize, interrupt).
	Summary string
	// NoSteer keeps the item from being handed to an active run by
	// Batch.Steer (e.g. a chat command); Steer stops before it, so the
	// items of its Group after it keep their order and run later.
	NoSteer bool
	// Keep exempts the item from the overflow policy (cap): it is never
	// dropped to make room and never rejected (drop=new), so a lane may
	// hold more than its cap. For items whose run may already have begun
	// (a replay after a restart or a failure): dropping one would report
	// it in Batch.Dropped while the run's trace of it stands. Interrupt
	// mode still supersedes it.
	Keep bool
	// NoInterrupt keeps the item out of interrupt mode's superseding: it
	// neither cancels the active run nor supersedes the items queued
	// before it, and a newer item does not supersede it; it waits its
	// turn in order, as in followup (e.g. a chat command: /status is no
	// newer message to answer instead of the running turn's).
	NoInterrupt bool
	// NoCancel keeps a newer item in interrupt mode from cancelling the
	// run of a batch made only of NoCancel items: it finishes, then the
	// newer item runs (e.g. a chat command: /compact is no answer for a
	// newer message to supersede, and cutting it short lost the
	// compaction the member asked for). Cancel (/stop) still cancels it.
	NoCancel bool
	// Steered is set by the Queue, never by the caller: in steer-backlog
	// mode, an active run took the item through Batch.Steer and it stayed
	// queued for a batch of its own, whose run can tell it was seen.
	Steered bool
}

// Batch is what one run receives.
type Batch[K comparable] struct {
	Key   K
	Class Class
	// Items are the items of this run, all of one Group, in arrival order.
	// They are empty in a batch that carries only Dropped items (steer
	// mode: the active run took every item queued after them).
	Items []Item
	// Dropped holds the items dropped with a summary since the previous
	// batch (drop=summarize, interrupt), oldest first. They are the run's
	// to settle (e.g. as one summary before Items): OnDrop is not called
	// for them, and they are not lost if the run never gets to them
	// (Cancel and Shutdown return the ones no batch took yet).
	Dropped []Item
	// Steer is set in the steer modes only. It returns the items of the
	// batch's Group that arrived while the run is active, up to the first
	// NoSteer one, and removes them from the queue (the runner calls it
	// before each model call); in steer-backlog mode it leaves them queued,
	// marked Steered, and returns each only once. After the run ends it
	// returns nil. It is safe for concurrent use.
	Steer func() []Item
}

// RunFunc runs one batch. ctx is cancelled by Cancel, by interrupt mode and
// at the end of the shutdown grace period; RunFunc must return soon after.
type RunFunc[K comparable] func(ctx context.Context, b Batch[K])

// Options configures a Queue.
type Options[K comparable] struct {
	// Caps are the concurrent-run caps per class (default main 4,
	// subagent 8; values <= 0 take the default).
	Caps map[Class]int
	// Settings returns a key's settings; it is called on each Enqueue and
	// when a run or a Do of the key ends (never with the Queue's lock
	// held), so changes apply to the next item and to those queued.
	// Nil means DefaultSettings.
	Settings func(key K) Settings
	// Run runs batches. Required.
	Run    RunFunc[K]
	Logger *zap.Logger
	// OnWait is called once per batch with the time it waited for a class
	// slot (zero when a slot was free). Optional.
	OnWait func(class Class, d time.Duration)
	// OnDrop is called for each item dropped silently by the drop policy
	// (drop=old; not for items dropped with a summary, which go to the next
	// Batch.Dropped, nor for items returned by Cancel or Shutdown), so the
	// owner can retire durable copies. Optional.
	OnDrop func(key K, it Item)
}

// Queue is the lane scheduler: one run at a time per key, a cap on
// concurrent runs per class. All methods are safe for concurrent use.
type Queue[K comparable] struct {
	opts Options[K]
	log  *zap.Logger
	caps map[Class]int

	// base is the parent of every run's context; Shutdown cancels it at
	// the end of the grace period.
	base       context.Context
	baseCancel context.CancelFunc

	// wg counts run goroutines, Next fns and armed debounce timers.
	wg sync.WaitGroup

	mu sync.Mutex // guards the fields below and every lane's fields
	// keys holds state only for keys that are queued, running, inside Do
	// or waiting for a debounce window; idle keys are removed.
	keys   map[K]*lane[K]
	active map[Class]int
	waits  map[Class]*waitList[K]
	closed bool
	nextN  uint64 // Next registrations so far (lane.nexts keys)
}

// New returns a Queue ready for Enqueue. opts.Run must not be nil.
func New[K comparable](opts Options[K]) *Queue[K] {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Run == nil {
		opts.Run = func(context.Context, Batch[K]) {}
	}
	caps := map[Class]int{ClassMain: DefaultMainCap, ClassSubagent: DefaultSubagentCap}
	for c, n := range opts.Caps {
		if n > 0 {
			caps[c] = n
		}
	}
	base, cancel := context.WithCancel(context.Background())
	return &Queue[K]{
		opts:       opts,
		log:        opts.Logger,
		caps:       caps,
		base:       base,
		baseCancel: cancel,
		keys:       map[K]*lane[K]{},
		active:     map[Class]int{},
		waits:      map[Class]*waitList[K]{},
	}
}

func (q *Queue[K]) settings(key K) Settings {
	if q.opts.Settings == nil {
		return DefaultSettings()
	}
	return q.opts.Settings(key).normalized()
}

func (q *Queue[K]) capOf(c Class) int {
	if n, ok := q.caps[c]; ok {
		return n
	}
	return DefaultMainCap
}

// Enqueue adds an item for key. It never blocks on a run. It returns
// ErrFull when the key's queue is at its cap with drop=new, and ErrClosed
// after Shutdown began.
func (q *Queue[K]) Enqueue(key K, class Class, it Item) error {
	s := q.settings(key)
	now := time.Now()
	if it.At.IsZero() {
		it.At = now
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	l := q.laneLocked(key)
	l.set, l.class = s, class
	var dropped []Item
	switch {
	case s.Mode == Interrupt && !it.NoInterrupt:
		// Interrupt supersedes everything older, whatever the cap, but
		// the NoInterrupt items, which keep their place.
		l.supersedeLocked(len(l.items))
		if l.cancel != nil && !l.noCancel {
			l.cancel(ErrCancelled)
		}
	case l.waitingLocked() >= s.Cap && !it.Keep:
		if s.Drop == DropNew {
			q.mu.Unlock()
			return ErrFull
		}
		dropped = l.dropOverflowLocked(l.waitingLocked()-s.Cap+1, s.Drop == DropSummarize)
	}
	l.items = append(l.items, it)
	l.last = now
	if l.running || l.doing {
		l.behind = true
	}
	q.kickLocked(l, now)
	q.mu.Unlock()
	if q.opts.OnDrop != nil {
		for _, d := range dropped {
			q.opts.OnDrop(key, d)
		}
	}
	return nil
}

// MaxDepth returns the most items waiting for any one key (not counting
// active runs'); it walks every key with the lock held.
func (q *Queue[K]) MaxDepth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	most := 0
	for _, l := range q.keys {
		most = max(most, len(l.items))
	}
	return most
}

// Depth returns how many items wait for key (not counting the active run's).
func (q *Queue[K]) Depth(key K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.keys[key]; l != nil {
		return len(l.items)
	}
	return 0
}
