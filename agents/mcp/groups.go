package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/atomicfile"
)

// groupRegistry records the process groups of the stdio servers this
// process started, in a file of its own in a directory (Options.GroupsDir),
// so that a daemon started after this one was SIGKILLed (or the machine's
// OOM killer took it) stops what they left running: a server usually exits
// when its stdin closes, but what it started (npx's node, a launcher's
// real server, a shell's background job) does not. Each file names its
// owner (pid and start time): a file whose owner still runs is another
// live daemon's, and never touched.
type groupRegistry struct {
	dir  string
	log  *zap.Logger
	self procID

	mu     sync.Mutex
	groups map[int]procID // by process group id (its leader's pid)
}

// procID names a process across pid reuse: its pid and its start time (in
// clock ticks since boot) on this boot, in this pid namespace (a pid names
// another process, or none, in another container's); Session is its
// session id, which every process of its group shares (nil: not recorded,
// by a gateway older than the field). 0 is a session id too: the one /proc
// shows for a session whose leader is outside this pid namespace (a
// container's or a CI runner's processes that never called setsid).
type procID struct {
	PID     int    `json:"pid"`
	Start   uint64 `json:"start"`
	Boot    string `json:"boot"`
	PIDNS   string `json:"pidns,omitempty"`
	Session *int   `json:"session,omitempty"`
}

// groupsFile is what a registry file holds.
type groupsFile struct {
	Owner  procID   `json:"owner"`
	Groups []procID `json:"groups"`
}

// newGroupRegistry returns the registry of this process in dir, or nil
// (recording nothing) where processes cannot be told apart (no /proc).
func newGroupRegistry(dir string, log *zap.Logger) *groupRegistry {
	self, err := thisProcess(os.Getpid())
	if err != nil {
		log.Info("mcp: stdio servers' process groups not recorded (no /proc)", zap.Error(err))
		return nil
	}
	return &groupRegistry{dir: dir, log: log, self: self, groups: map[int]procID{}}
}

func (r *groupRegistry) path() string {
	return filepath.Join(r.dir, "groups-"+strconv.Itoa(r.self.PID)+".json")
}

// add records the group led by pid (a server just started).
func (r *groupRegistry) add(pid int) {
	if r == nil {
		return
	}
	id, err := thisProcess(pid)
	if err != nil {
		return // it exited already: nothing to reap
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups[pid] = id
	r.saveLocked()
}

// remove forgets the group led by pid (stopped: reap ran).
func (r *groupRegistry) remove(pid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.groups[pid]; !ok {
		return
	}
	delete(r.groups, pid)
	r.saveLocked()
}

// saveLocked writes the registry (rename over: a crash leaves the old
// file or the new one); with no group left the file goes.
func (r *groupRegistry) saveLocked() {
	if len(r.groups) == 0 {
		if err := os.Remove(r.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("mcp: removing the process group record", zap.Error(err))
		}
		_ = os.Remove(r.dir) // when empty: a stopped daemon leaves nothing
		return
	}
	f := groupsFile{Owner: r.self}
	for _, g := range r.groups {
		f.Groups = append(f.Groups, g)
	}
	b, err := json.Marshal(f)
	if err == nil {
		err = writeReplace(r.path(), b)
	}
	if err != nil {
		r.log.Warn("mcp: recording the stdio servers' process groups", zap.Error(err))
	}
}

// writeReplace writes b to path atomically (internal/atomicfile).
func writeReplace(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcp: groups dir: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("mcp: record groups: %w", err)
	}
	return nil
}

// reapLeft stops the process groups recorded by daemons that no longer
// run (on this boot, in this pid namespace), and removes their files; it
// returns how many groups it stopped. A group is stopped only while it is
// provably the one recorded (see leftGroup).
func (r *groupRegistry) reapLeft() int {
	if r == nil {
		return 0
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("mcp: reading the process group records", zap.Error(err))
		}
		return 0
	}
	// Every process of this pid namespace started at or after its first
	// one: a record of anything older is another namespace's that was
	// given this one's id again (a container restarted: its namespace
	// ended with every process in it, and the new one's id is the lowest
	// free, often the old one's).
	first, err := readStat(1)
	if err != nil {
		r.log.Info("mcp: process group records not reaped (pid 1 unreadable)", zap.Error(err))
		return 0
	}
	reaped := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "groups-") || !strings.HasSuffix(name, ".json") {
			continue // this daemon's own file is told by its owner (a dead one may have had its pid)
		}
		path := filepath.Join(r.dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var f groupsFile
		if err := json.Unmarshal(b, &f); err != nil {
			r.log.Warn("mcp: unreadable process group record removed", zap.String("file", path), zap.Error(err))
			_ = os.Remove(path)
			continue
		}
		if f.Owner.Boot == r.self.Boot && f.Owner.PIDNS == r.self.PIDNS && f.Owner.Start >= first.start {
			if cur, err := thisProcess(f.Owner.PID); err == nil && cur.Start == f.Owner.Start {
				continue // a live daemon's servers
			}
			for _, g := range f.Groups {
				if g.Start >= first.start && leftGroup(g) {
					r.log.Warn("mcp: stopping what a stdio server of a daemon that died left running",
						zap.Int("process_group", g.PID), zap.Int("daemon_pid", f.Owner.PID))
					killGroup(g.PID, groupGrace)
					reaped++
				}
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("mcp: removing a process group record", zap.String("file", path), zap.Error(err))
		}
	}
	_ = os.Remove(r.dir) // when empty
	return reaped
}
