package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// SnapshotFile is one file of a Snapshot: its path below the state dir
// (slash-separated), permission bits, size and content (Size bytes).
type SnapshotFile struct {
	Path string
	Mode fs.FileMode
	Size int64
	Body io.Reader
}

// SnapshotStats counts what a Snapshot handed out.
type SnapshotStats struct {
	Files       int
	Bytes       int64
	Agents      int
	Transcripts int // current and archived transcripts
}

// snapshotSkip reports whether the file at rel (slash-separated, below
// the state dir) stays out of a snapshot: the daemon's pid lock, lock
// files (their flock means nothing in a copy), temporary files of an
// atomic write in progress, and the search index, which is derived from
// the transcripts and rebuilt from them when it is missing.
func snapshotSkip(rel string) bool {
	base := filepath.Base(rel)
	return rel == "gateway.pid" || strings.HasSuffix(base, lockExt) || strings.HasSuffix(base, ".tmp") ||
		rel == searchDirName || strings.HasPrefix(rel, searchDirName+"/")
}

// snapshotOrder ranks the top-level parts of a state dir in the order a
// Snapshot reads them; see Snapshot.
func snapshotOrder(top string) int {
	switch top {
	case "cursors", "telegram":
		return 0
	case "ingress":
		return 1
	case "agents":
		return 2
	}
	return 3
}

// Snapshot reads a consistent copy of the files state below stateDir and
// hands each file to emit, one at a time (emit must read Body before it
// returns). It runs beside a running daemon and changes nothing.
//
// Consistency: every file is either replaced by an atomic rename (its
// open descriptor keeps the version it opened) or append-only, cut back
// at worst to its last whole line (appended files are read up to their
// size when opened, cut at the last newline). An agent's index
// (sessions.json and its change log) and the set of its transcripts are
// taken together under the store lock, which every create, reset, delete
// and index write takes: the index names no transcript the copy lacks,
// and no reset renames one between the two. Counters may lag the
// transcripts by what was appended after: the daemon repairs that at its
// start, as after a crash. The parts are read in dependency order, each
// at least as new as those before it: channel cursors, then the ingress
// journal, then the agents' sessions, then the rest (pairing, usage,
// rooms, media). An update the copied cursor has not passed is fetched
// again and dropped as a duplicate or journaled; a record the copied
// journal still holds pending whose message the copied transcript
// already has is recognised by its record id when the restored daemon
// resumes it (the reply in the transcript is sent, the turn is not run
// again), as after a crash.
func Snapshot(ctx context.Context, stateDir string, lockTimeout time.Duration, emit func(SnapshotFile) error) (SnapshotStats, error) {
	var st SnapshotStats
	tops, err := os.ReadDir(stateDir)
	if err != nil {
		return st, fmt.Errorf("sessions: snapshot: %w", err)
	}
	slices.SortStableFunc(tops, func(a, b fs.DirEntry) int { return snapshotOrder(a.Name()) - snapshotOrder(b.Name()) })
	locks := newLockSet(lockTimeout, 0, zap.NewNop(), nil)
	defer locks.close()
	s := &snapshotter{root: stateDir, emit: emit, st: &st}
	for _, top := range tops {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("sessions: snapshot: %w", err)
		}
		if top.Name() == "agents" && top.IsDir() {
			if err := s.agents(ctx, locks); err != nil {
				return st, err
			}
			continue
		}
		if err := s.tree(top.Name(), ""); err != nil {
			return st, err
		}
	}
	return st, nil
}

// snapshotter walks one Snapshot.
type snapshotter struct {
	root string
	emit func(SnapshotFile) error
	st   *SnapshotStats
}

// tree hands out rel (a file, or a directory's files in name order);
// stop is a directory left to another step.
func (s *snapshotter) tree(rel, stop string) error {
	if snapshotSkip(rel) || rel == stop {
		return nil
	}
	path := filepath.Join(s.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed meanwhile (a pruned archive, a replaced temp file)
	}
	if err != nil {
		return fmt.Errorf("sessions: snapshot: %w", err)
	}
	switch {
	case fi.IsDir():
		des, err := os.ReadDir(path)
		if err != nil {
			return fmt.Errorf("sessions: snapshot: %w", err)
		}
		if rel == "jobs" {
			// jobs.json before the ended jobs' file its jobs move to: a
			// job that ends between the two reads is in the later one.
			first := func(de fs.DirEntry) int {
				if de.Name() == "jobs.json" {
					return 0
				}
				return 1
			}
			slices.SortStableFunc(des, func(a, b fs.DirEntry) int { return first(a) - first(b) })
		}
		for _, de := range des {
			if err := s.tree(rel+"/"+de.Name(), stop); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sessions: snapshot: %w", err)
		}
		defer f.Close()
		return s.file(rel, f)
	}
	return nil // symlinks, sockets: nothing the gateway writes
}

// agents hands out every agent's sessions directory, each under its
// store lock (openAgent), and then the rest of agents/.
func (s *snapshotter) agents(ctx context.Context, locks *lockSet) error {
	des, err := os.ReadDir(filepath.Join(s.root, "agents"))
	if err != nil {
		return fmt.Errorf("sessions: snapshot: %w", err)
	}
	for _, de := range des {
		rel := "agents/" + de.Name()
		if !de.IsDir() || !routing.ValidID(de.Name()) {
			if err := s.tree(rel, ""); err != nil {
				return err
			}
			continue
		}
		dir := filepath.Join(s.root, "agents", de.Name(), "sessions")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			if err := s.agent(ctx, locks, dir, rel+"/sessions"); err != nil {
				return err
			}
			s.st.Agents++
		}
		if err := s.tree(rel, rel+"/sessions"); err != nil {
			return err
		}
	}
	return nil
}

// agentFile is one file of an agent's directory opened under the store
// lock: the small files read whole, the transcripts kept open.
type agentFile struct {
	name string
	data []byte   // read under the lock
	f    *os.File // a transcript, read after it
}

// agent hands out one agent's sessions directory: under the store lock
// it reads the index files and opens every transcript (so that a reset
// or prune renaming one afterwards does not matter), then releases the
// lock and copies the transcripts.
func (s *snapshotter) agent(ctx context.Context, locks *lockSet, dir, rel string) error {
	files, err := s.openAgent(ctx, locks, dir)
	defer func() {
		for _, af := range files {
			if af.f != nil {
				_ = af.f.Close()
			}
		}
	}()
	if err != nil {
		return err
	}
	for _, af := range files {
		if af.f == nil {
			if err := s.bytes(rel+"/"+af.name, af.data); err != nil {
				return err
			}
			continue
		}
		s.st.Transcripts++
		if err := s.file(rel+"/"+af.name, af.f); err != nil {
			return err
		}
	}
	return nil
}

func (s *snapshotter) openAgent(ctx context.Context, locks *lockSet, dir string) ([]agentFile, error) {
	_, unlock, err := locks.get(filepath.Join(dir, indexName) + lockExt).Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("sessions: snapshot: store lock: %w", err)
	}
	defer unlock()
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sessions: snapshot: %w", err)
	}
	var files []agentFile
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() || snapshotSkip(name) {
			continue
		}
		path := filepath.Join(dir, name)
		if isTranscriptName(name) {
			f, err := os.Open(path)
			if err != nil {
				return files, fmt.Errorf("sessions: snapshot: %w", err)
			}
			files = append(files, agentFile{name: name, f: f})
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return files, fmt.Errorf("sessions: snapshot: %w", err)
		}
		files = append(files, agentFile{name: name, data: wholeLines(name, b)})
	}
	return files, nil
}

// isTranscriptName reports whether name is a current or archived
// transcript ("<uuid>.jsonl", "<uuid>.jsonl.reset.<ts>", ".deleted.<ts>").
func isTranscriptName(name string) bool {
	if id, ok := strings.CutSuffix(name, transcriptExt); ok {
		return sessions.CheckSessionID(id) == nil
	}
	_, _, _, ok := parseArchiveName(name)
	return ok
}

// appendOnly reports whether the file called name is appended to in
// place (JSONL: transcripts, the journal, change logs, usage, rooms), so
// a copy keeps only its whole lines.
func appendOnly(name string) bool { return strings.Contains(name, ".jsonl") }

// wholeLines cuts b, the content of the file called name, after its
// last newline when the file is append-only.
func wholeLines(name string, b []byte) []byte {
	if !appendOnly(name) {
		return b
	}
	return b[:bytes.LastIndexByte(b, '\n')+1]
}

// file hands out f: up to its size when handed out, cut to whole lines
// when it is append-only.
func (s *snapshotter) file(rel string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sessions: snapshot: %w", err)
	}
	size := fi.Size()
	if appendOnly(rel) {
		if size, err = lastLineEnd(f, size); err != nil {
			return fmt.Errorf("sessions: snapshot: %s: %w", rel, err)
		}
	}
	return s.out(SnapshotFile{Path: rel, Mode: fi.Mode().Perm(), Size: size, Body: io.NewSectionReader(f, 0, size)})
}

func (s *snapshotter) bytes(rel string, b []byte) error {
	return s.out(SnapshotFile{Path: rel, Mode: 0o600, Size: int64(len(b)), Body: bytes.NewReader(b)})
}

func (s *snapshotter) out(sf SnapshotFile) error {
	s.st.Files++
	s.st.Bytes += sf.Size
	if err := s.emit(sf); err != nil {
		return fmt.Errorf("sessions: snapshot: %s: %w", sf.Path, err)
	}
	return nil
}

// lastLineEnd is the offset just past the last newline in the first size
// bytes of f (0 when there is none), read backwards in blocks.
func lastLineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == end-start) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
