package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

// The files backend's search index (issue 14) is an inverted index of
// word → messages kept under <stateDir>/search: immutable segment files
// (search_segment.go) listed by manifest.json, plus the messages appended
// since the last flush in memory (memSegment). Why not an embedded
// full-text library: bleve's index is a directory one process opens at a
// time (the CLI could not search beside the daemon), costs 10–100 µs per
// document to update and several times this index's size; chat search needs
// neither scoring nor analyzers, and the transcript stays the source of
// truth, so the index stores no text at all (snippets are read from the
// transcript line the posting points to).
//
// Writing: each transcript append indexes its messages in memory (the
// per-message cost: tokenising plus map appends, measured by
// BenchmarkSearchIndexAppend). The daemon (a Manager that is not Passive,
// holding search/writer.lock) flushes that tail as a new segment when it
// holds flushDocs messages or is flushEvery old, and at Close; more than
// maxSegments segments are merged into one, dropping the messages of
// sessions that are no longer current (reset, deleted, pruned). Every
// file is written to a temporary name, fsynced and renamed, and only then
// listed in the manifest (itself replaced atomically), so a crash at any
// instant leaves the previous manifest and its complete segments.
//
// Loading (at the first append or search): the manifest's segments are
// opened and checked (CRC); each segment row records up to which offset of
// its session's transcript the messages are indexed, and every current
// session's transcript is read from that offset to its end (the catch-up:
// what a crash lost of the tail, what another process appended). A
// missing or damaged manifest or segment is discarded and the whole index
// rebuilt from the transcripts. A Passive Manager (the CLI beside the
// daemon) only reads: it catches up in memory and never writes.
//
// Concurrency: appends take mu briefly; a search takes segMu shared for
// its duration and mu only to snapshot the tail (append-only slices);
// flush and merge are serialised by flushMu and take segMu exclusively
// only to install their result.

const (
	searchDirName = "search"
	manifestName  = "manifest.json"
	writerLock    = "writer.lock"
	// flushDocs and flushEvery bound the in-memory tail.
	flushDocs  = 64 << 10
	flushEvery = time.Minute
	// maxSegments triggers a merge.
	maxSegments = 8
	// searchTick is how often the writer's loop looks at the tail.
	searchTick = 5 * time.Second
)

// searchIndex is the files backend's Searcher (see above). It is safe for
// concurrent use.
type searchIndex struct {
	m   *Manager
	dir string
	log *zap.Logger

	start  sync.Once
	ready  chan struct{} // closed when loaded
	loadMu sync.Mutex    // guards loadErr
	// loadErr is why the index could not load (searches report it).
	loadErr error
	writer  bool         // holds writerLock; set before ready
	lock    *flock.Flock // the writer lock, nil for a reader

	flushMu sync.Mutex // serialises flush and merge

	segMu  sync.RWMutex  // guards segs, frozen; searches hold it shared
	segs   []*segment    // oldest first
	frozen []*memSegment // tails being written, oldest first

	mu      sync.Mutex // guards the fields below
	tail    *memSegment
	covered map[string]int64  // rowKey → transcript offset indexed up to
	dropped map[string]uint64 // rowKey → docs in segments of gen ≤ this are stale
	first   map[string]int64  // rowKey → first offset appended before the load ended
	nextGen uint64
	loaded  bool
	recheck [][2]string // agent, session id switched to during the load
	flushed time.Time   // last flush (or load)
	closed  bool

	cancel context.CancelFunc
	done   chan struct{} // closed when the writer's loop ends (or never started)
}

func newSearchIndex(m *Manager) *searchIndex {
	done := make(chan struct{})
	close(done)
	return &searchIndex{
		m: m, dir: filepath.Join(m.opts.StateDir, searchDirName), log: m.log.With(zap.String("component", "search")),
		ready: make(chan struct{}), tail: newMemSegment(), covered: map[string]int64{},
		dropped: map[string]uint64{}, first: map[string]int64{}, nextGen: 1, done: done,
		cancel: func() {},
	}
}

// ensureStarted starts loading the index (once, in the background).
func (x *searchIndex) ensureStarted() {
	x.start.Do(func() {
		// Under mu, so that close either sees this goroutine (and waits
		// for it) or runs first (and none starts).
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.closed {
			x.setLoadErr(errors.New("search: index closed"))
			close(x.ready)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		x.cancel, x.done = cancel, done
		go x.run(ctx, done)
	})
}

func (x *searchIndex) setLoadErr(err error) {
	x.loadMu.Lock()
	x.loadErr = err
	x.loadMu.Unlock()
}

func (x *searchIndex) getLoadErr() error {
	x.loadMu.Lock()
	defer x.loadMu.Unlock()
	return x.loadErr
}

// wait returns once the index is loaded.
func (x *searchIndex) wait(ctx context.Context) error {
	x.ensureStarted()
	select {
	case <-x.ready:
		return x.getLoadErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run loads the index, then (the writer) flushes and merges until ctx
// ends.
func (x *searchIndex) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	err := x.load(ctx)
	if err != nil {
		x.setLoadErr(err)
		if ctx.Err() == nil {
			x.log.Error("search index: load failed", zap.Error(err))
		}
	}
	close(x.ready)
	if err != nil || !x.writer {
		return
	}
	tick := time.NewTicker(searchTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			x.mu.Lock()
			due := len(x.tail.docs) >= flushDocs || (!x.tail.empty() && time.Since(x.flushed) >= flushEvery)
			x.mu.Unlock()
			if !due {
				continue
			}
			if err := x.flush(); err != nil {
				x.log.Error("search index: flush failed", zap.Error(err))
				continue
			}
			if err := x.mergeIfDue(ctx); err != nil && ctx.Err() == nil {
				x.log.Error("search index: merge failed", zap.Error(err))
			}
		}
	}
}

// close stops the loop, flushes the tail (writer) and releases the files.
func (x *searchIndex) close() error {
	x.mu.Lock()
	x.closed = true
	cancel, done := x.cancel, x.done
	x.mu.Unlock()
	cancel()
	<-done
	var err error
	select {
	case <-x.ready:
		if x.writer && x.getLoadErr() == nil {
			err = x.flush()
		}
	default: // never started
	}
	x.segMu.Lock()
	for _, s := range x.segs {
		err = errors.Join(err, s.close())
	}
	x.segs, x.frozen = nil, nil
	x.segMu.Unlock()
	if x.lock != nil {
		err = errors.Join(err, x.lock.Unlock())
	}
	return err
}

// manifest is search/manifest.json.
type manifest struct {
	Version  int               `json:"version"`
	Next     uint64            `json:"next"`
	Segments []uint64          `json:"segments"`
	Dropped  map[string]uint64 `json:"dropped,omitempty"`
}

func segName(gen uint64) string { return fmt.Sprintf("seg-%08d.gsx", gen) }

// load opens the manifest's segments (or starts over when they are
// missing or damaged) and catches up with the transcripts.
func (x *searchIndex) load(ctx context.Context) error {
	if !x.m.opts.Passive {
		if err := mkdirPrivate(x.dir); err != nil {
			return fmt.Errorf("search: load: %w", err)
		}
		fl := flock.New(filepath.Join(x.dir, writerLock))
		ok, err := fl.TryLock()
		if err != nil {
			return fmt.Errorf("search: load: writer lock: %w", err)
		}
		if ok {
			x.lock, x.writer = fl, true
			_ = os.Chmod(fl.Path(), 0o600)
		}
	}
	segs, mf, err := x.openManifest()
	for try := 0; try < 3 && errors.Is(err, os.ErrNotExist) && !x.writer; try++ {
		// The daemon may have merged and removed a segment between our
		// reading the manifest and opening it: read the new one.
		segs, mf, err = x.openManifest()
	}
	if err != nil {
		if _, serr := os.Stat(filepath.Join(x.dir, manifestName)); errors.Is(serr, os.ErrNotExist) {
			// No index yet (a fresh state dir, or one from before it):
			// nothing is wrong, it is built now.
			x.log.Info("search index: building from the transcripts")
		} else {
			x.log.Warn("search index: rebuilding from the transcripts", zap.Error(err))
		}
		segs, mf = nil, manifest{Next: 1}
		if x.writer {
			if err := x.removeStale(nil); err != nil {
				return err
			}
		}
	} else if x.writer {
		if err := x.removeStale(mf.Segments); err != nil {
			return err
		}
	}
	x.segMu.Lock()
	x.segs = segs
	x.segMu.Unlock()
	x.mu.Lock()
	x.nextGen = max(mf.Next, 1)
	for _, s := range segs {
		x.nextGen = max(x.nextGen, s.gen+1)
	}
	for k, g := range mf.Dropped {
		x.dropped[k] = g
	}
	for _, s := range segs {
		for _, r := range s.rows {
			k := rowKey(r.agent, r.sid)
			if g, ok := x.dropped[k]; ok && s.gen <= g {
				continue
			}
			x.covered[k] = max(x.covered[k], r.covered)
		}
	}
	x.mu.Unlock()
	if err := x.catchUpAll(ctx); err != nil {
		return err
	}
	x.mu.Lock()
	x.loaded, x.first, x.flushed = true, nil, time.Now()
	recheck := x.recheck
	x.recheck = nil
	x.mu.Unlock()
	for _, r := range recheck {
		if st, err := x.m.Store(r[0]); err == nil {
			x.ensureSession(r[0], st.dir, r[1])
		}
	}
	if x.writer {
		if err := x.flush(); err != nil {
			return err
		}
		return x.mergeIfDue(ctx)
	}
	return nil
}

// openManifest reads the manifest and opens its segments.
func (x *searchIndex) openManifest() ([]*segment, manifest, error) {
	var mf manifest
	b, err := os.ReadFile(filepath.Join(x.dir, manifestName))
	if err != nil {
		return nil, mf, fmt.Errorf("search: manifest: %w", err)
	}
	if err := json.Unmarshal(b, &mf); err != nil || mf.Version != 1 {
		return nil, mf, fmt.Errorf("search: manifest: %w: not a version 1 manifest (%v)", errSegment, err)
	}
	var segs []*segment
	for i, g := range mf.Segments {
		if i > 0 && g <= mf.Segments[i-1] {
			err = fmt.Errorf("search: manifest: %w: segments out of order", errSegment)
		} else {
			var s *segment
			if s, err = openSegment(filepath.Join(x.dir, segName(g)), g); err == nil {
				segs = append(segs, s)
				continue
			}
		}
		for _, s := range segs {
			_ = s.close()
		}
		return nil, mf, err
	}
	return segs, mf, nil
}

// removeStale deletes segment files not in keep (leftovers of a crash or
// of a discarded index); nil keep removes the manifest too.
func (x *searchIndex) removeStale(keep []uint64) error {
	des, err := os.ReadDir(x.dir)
	if err != nil {
		return fmt.Errorf("search: clean: %w", err)
	}
	listed := map[string]bool{}
	for _, g := range keep {
		listed[segName(g)] = true
	}
	for _, de := range des {
		n := de.Name()
		stale := (strings.HasPrefix(n, "seg-") && !listed[n]) || strings.HasSuffix(n, ".tmp") ||
			(keep == nil && n == manifestName)
		if stale {
			if err := os.Remove(filepath.Join(x.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("search: clean: %w", err)
			}
		}
	}
	return nil
}

// writeManifest lists segs (and the dropped sessions) durably.
func (x *searchIndex) writeManifest(segs []uint64, next uint64, dropped map[string]uint64) error {
	mf := manifest{Version: 1, Next: next, Segments: segs, Dropped: dropped}
	b, err := json.Marshal(mf)
	if err != nil {
		return fmt.Errorf("search: manifest: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(x.dir, manifestName), b); err != nil {
		return fmt.Errorf("search: manifest: %w", err)
	}
	return nil
}

// flush writes the in-memory tail as a new segment (the writer only).
func (x *searchIndex) flush() error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.segMu.Lock()
	x.mu.Lock()
	if !x.tail.empty() {
		x.frozen = append(x.frozen, x.tail)
		x.tail = newMemSegment()
	}
	x.flushed = time.Now()
	x.mu.Unlock()
	pending := x.frozen
	x.segMu.Unlock()
	for _, t := range pending {
		if err := x.writeFrozen(t); err != nil {
			return err
		}
	}
	return nil
}

// writeFrozen writes t, the oldest frozen tail, as a segment and installs it.
func (x *searchIndex) writeFrozen(t *memSegment) error {
	w, err := t.writer()
	if err != nil {
		return err
	}
	data, err := w.bytes()
	if err != nil {
		return err
	}
	x.mu.Lock()
	gen := x.nextGen
	x.nextGen++
	dropped := cloneDropped(x.dropped)
	x.mu.Unlock()
	path := filepath.Join(x.dir, segName(gen))
	if err := writeSegmentFile(path, data); err != nil {
		return err
	}
	x.segMu.RLock()
	gens := make([]uint64, 0, len(x.segs)+1)
	for _, s := range x.segs {
		gens = append(gens, s.gen)
	}
	x.segMu.RUnlock()
	if err := x.writeManifest(append(gens, gen), gen+1, dropped); err != nil {
		_ = os.Remove(path)
		return err
	}
	s, err := openSegment(path, gen)
	if err != nil {
		return err
	}
	x.segMu.Lock()
	x.segs = append(x.segs, s)
	if len(x.frozen) > 0 && x.frozen[0] == t {
		x.frozen = x.frozen[1:]
	}
	x.segMu.Unlock()
	return nil
}

func cloneDropped(m map[string]uint64) map[string]uint64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SearchFiles lists the files of the search index under stateDir
// with their sizes (the doctor, tests and benchmarks report them).
func SearchFiles(stateDir string) (map[string]int64, error) {
	dir := filepath.Join(stateDir, searchDirName)
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("search: files: %w", err)
	}
	out := map[string]int64{}
	for _, de := range des {
		if fi, err := de.Info(); err == nil && !de.IsDir() {
			out[de.Name()] = fi.Size()
		}
	}
	return out, nil
}
