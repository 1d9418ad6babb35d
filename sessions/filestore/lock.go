package filestore

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Lock defaults (SPEC §3.5).
const (
	DefaultLockTimeout = 10 * time.Second
	DefaultMaxHold     = 5 * time.Minute
)

// ErrLockTimeout is wrapped by every *LockTimeoutError.
var ErrLockTimeout = errors.New("lock acquire timed out")

// LockTimeoutError says which lock could not be taken in time and who held it.
type LockTimeoutError struct {
	Path   string
	Waited time.Duration
	Holder LockInfo // zero when the lock file held no readable metadata
}

func (e *LockTimeoutError) Error() string {
	h := "holder unknown"
	if e.Holder.PID != 0 {
		h = fmt.Sprintf("held by pid %d on host %q since %s", e.Holder.PID, e.Holder.Host,
			e.Holder.CreatedAt.Format(time.RFC3339))
	}
	return fmt.Sprintf("lock %s: timed out after %s: %s", e.Path, e.Waited.Round(time.Millisecond), h)
}

// Unwrap makes errors.Is(err, ErrLockTimeout) true.
func (e *LockTimeoutError) Unwrap() error { return ErrLockTimeout }

// LockInfo is the diagnostic metadata a holder writes into its lock file.
type LockInfo struct {
	PID       int       `json:"pid"`
	StartTime time.Time `json:"startTime"` // holder process start, tells a reused pid apart
	CreatedAt time.Time `json:"createdAt"` // when the lock was taken
	Host      string    `json:"host"`
}

// ReadLockInfo reads a lock file's metadata. An empty file (lock released)
// gives a zero LockInfo and no error.
func ReadLockInfo(path string) (LockInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return LockInfo{}, err
	}
	var li LockInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return LockInfo{}, fmt.Errorf("read lock info %s: %w", path, err)
	}
	return li, nil
}

// lockSet hands out one fileLock per path, so goroutines of this process
// exclude each other before flock(2) excludes other processes.
type lockSet struct {
	timeout, maxHold time.Duration
	log              *zap.Logger
	observe          func(string, time.Duration) // Options.Observe, or nil
	host             string
	start            time.Time

	mu      sync.Mutex
	locks   map[string]*fileLock // guarded by mu
	open    *list.List           // of *fileLock with a cached fh, most recent first; guarded by mu
	maxOpen int                  // bound on open's length
	closed  bool                 // guarded by mu: nothing is cached any more
}

func newLockSet(timeout, maxHold time.Duration, log *zap.Logger, observe func(string, time.Duration)) *lockSet {
	host, _ := os.Hostname()
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if maxHold <= 0 {
		maxHold = DefaultMaxHold
	}
	return &lockSet{timeout: timeout, maxHold: maxHold, log: log, observe: observe, host: host,
		start: processStart(), locks: map[string]*fileLock{}, open: list.New(), maxOpen: maxOpenLockFiles}
}

// get returns the process-wide lock for path (the lock file itself).
func (ls *lockSet) get(path string) *fileLock {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.locks[path]
	if !ok {
		l = &fileLock{path: path, set: ls, sem: make(chan struct{}, 1), fd: -1}
		ls.locks[path] = l
	}
	return l
}

// fileLock is an exclusive lock on one <file>.lock: an in-process semaphore
// plus flock(2). It is reentrant through the context returned by Acquire.
type fileLock struct {
	path string
	set  *lockSet
	sem  chan struct{} // holds one token while some goroutine owns the lock
	fh   *os.File      // the open lock file or nil; used only by the sem holder
	fd   int           // fh's descriptor

	elem    *list.Element // in set.open while fh is cached there; guarded by set.mu
	dropped bool          // forgotten: fh is closed on release; guarded by set.mu

	mu    sync.Mutex // guards gen, held, timer, meta
	gen   uint64
	held  bool
	timer *time.Timer
	meta  bool // holder metadata written for this hold
}

// lockMetaAfter is how long a lock is held before its holder's metadata
// is written into the lock file (for lock-timeout errors and `gateway
// doctor`). Most holds are far shorter: they cost no file writes at all, and
// a holder that dies that fast leaves nothing stale (the kernel drops its
// flock).
const lockMetaAfter = 50 * time.Millisecond

type heldKey struct{}

// heldLock links the locks a context's owner holds.
type heldLock struct {
	next *heldLock
	lock *fileLock
	gen  uint64
	once sync.Once // release's: the unlock Acquire returns is idempotent
}

// release lets go of the hold h records, once.
func (h *heldLock) release() { h.once.Do(func() { h.lock.release(h.gen) }) }

func (l *fileLock) heldIn(ctx context.Context) bool {
	h, _ := ctx.Value(heldKey{}).(*heldLock)
	for ; h != nil; h = h.next {
		if h.lock == l {
			l.mu.Lock()
			ok := l.held && l.gen == h.gen
			l.mu.Unlock()
			return ok
		}
	}
	return false
}

// Lock satisfies the transcript's locker: it acquires l (a no-op when ctx
// already carries it) and returns the release function.
func (l *fileLock) Lock(ctx context.Context) (func(), error) {
	_, unlock, err := l.Acquire(ctx)
	return unlock, err
}

// Acquire takes the lock, waiting at most the set's timeout. The returned
// context carries the held lock: passing it (or a child) to Acquire again
// does not block. unlock is idempotent; the max-hold watchdog may have
// released the lock already.
func (l *fileLock) Acquire(ctx context.Context) (context.Context, func(), error) {
	return l.acquireWithin(ctx, l.set.timeout)
}

// acquireWithin is Acquire with an explicit timeout.
func (l *fileLock) acquireWithin(ctx context.Context, timeout time.Duration) (context.Context, func(), error) {
	if l.heldIn(ctx) {
		return ctx, func() {}, nil
	}
	start := time.Now()
	var stopDeadline context.CancelFunc
	// The deadline's context (a timer) is made only when the lock is busy:
	// most acquires find it free.
	var tctx context.Context
	done := func() <-chan struct{} {
		if tctx == nil {
			tctx, stopDeadline = context.WithDeadline(ctx, start.Add(timeout))
		}
		return tctx.Done()
	}
	defer func() {
		if stopDeadline != nil {
			stopDeadline()
		}
	}()
	fail := func() (context.Context, func(), error) {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("lock %s: %w", l.path, err)
		}
		li, _ := ReadLockInfo(l.path)
		return nil, nil, &LockTimeoutError{Path: l.path, Waited: time.Since(start), Holder: li}
	}
	select {
	case l.sem <- struct{}{}:
	default:
		select {
		case l.sem <- struct{}{}:
		case <-done():
			return fail()
		}
	}
	delay := time.Millisecond
	for {
		ok, err := l.tryLock()
		if err != nil {
			<-l.sem
			return nil, nil, fmt.Errorf("lock %s: %w", l.path, err)
		}
		if ok {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-done():
			t.Stop()
			<-l.sem
			return fail()
		}
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
	acquired := time.Now().UTC()
	if l.set.observe != nil {
		l.set.observe(ObserveLockWait, acquired.Sub(start))
	}
	l.mu.Lock()
	l.gen++
	gen := l.gen
	l.held, l.meta = true, false
	if l.set.maxHold <= lockMetaAfter {
		l.timer = time.AfterFunc(l.set.maxHold, func() { l.expire(gen) })
	} else {
		l.timer = time.AfterFunc(lockMetaAfter, func() { l.writeMeta(gen, acquired) })
	}
	l.mu.Unlock()
	h := &heldLock{next: ctxHeld(ctx), lock: l, gen: gen}
	return context.WithValue(ctx, heldKey{}, h), h.release, nil
}

func ctxHeld(ctx context.Context) *heldLock {
	h, _ := ctx.Value(heldKey{}).(*heldLock)
	return h
}

// expire is the max-hold watchdog: a holder that forgot to release (or is
// stuck) must not block everyone else forever.
func (l *fileLock) expire(gen uint64) {
	l.set.log.Warn("lock held longer than max hold, releasing it",
		zap.String("path", l.path), zap.Duration("max_hold", l.set.maxHold))
	l.release(gen)
}

// writeMeta records the holder in the lock file once a hold lasts
// lockMetaAfter, then arms the max-hold watchdog for the rest.
func (l *fileLock) writeMeta(gen uint64, acquired time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.gen != gen {
		return
	}
	li := LockInfo{PID: os.Getpid(), StartTime: l.set.start, CreatedAt: acquired, Host: l.set.host}
	b, _ := json.Marshal(li)
	// Metadata is written in place: the file is never replaced while in use.
	if err := os.WriteFile(l.path, b, 0o600); err != nil {
		l.set.log.Warn("lock metadata not written", zap.String("path", l.path), zap.Error(err))
	}
	l.meta = true
	l.timer = time.AfterFunc(l.set.maxHold-time.Since(acquired), func() { l.expire(gen) })
}

func (l *fileLock) release(gen uint64) {
	l.mu.Lock()
	if !l.held || l.gen != gen {
		l.mu.Unlock()
		return
	}
	l.held = false
	l.timer.Stop()
	meta := l.meta
	l.mu.Unlock()
	// Truncate rather than delete: a waiter may already have the file open.
	if meta {
		if err := os.Truncate(l.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.set.log.Warn("lock metadata not cleared", zap.String("path", l.path), zap.Error(err))
		}
	}
	if err := l.unlock(); err != nil {
		l.set.log.Error("unlock failed", zap.String("path", l.path), zap.Error(err))
	}
	<-l.sem
}

// processStart approximates this process's start time from /proc, falling
// back to now.
func processStart() time.Time {
	if fi, err := os.Stat("/proc/self"); err == nil {
		return fi.ModTime().UTC()
	}
	return time.Now().UTC()
}
