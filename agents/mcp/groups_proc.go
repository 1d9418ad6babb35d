package mcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procDir is where the processes' stat files are read (a test points it
// at a process table of its own).
var procDir = "/proc"

// thisProcess reads pid's start time, session, and the boot and pid
// namespace it belongs to from /proc.
func thisProcess(pid int) (procID, error) {
	st, err := readStat(pid)
	if err != nil {
		return procID{}, err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return procID{}, fmt.Errorf("mcp: boot id: %w", err)
	}
	// The namespace /proc shows (its pids are those of the recorded ids).
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return procID{}, fmt.Errorf("mcp: pid namespace: %w", err)
	}
	session := st.session
	return procID{PID: pid, Start: st.start, Boot: strings.TrimSpace(string(boot)), PIDNS: ns, Session: &session}, nil
}

// procStat is what reaping needs of /proc/<pid>/stat.
type procStat struct {
	pgrp    int
	session int
	start   uint64
	zombie  bool
}

// readStat parses /proc/<pid>/stat (the command, in parentheses, may hold
// spaces and parentheses: the fields start after the last ')').
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(procDir + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, fmt.Errorf("mcp: process %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("mcp: process %d: stat without a command", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 { // state is field 3 of stat; starttime field 22
		return procStat{}, fmt.Errorf("mcp: process %d: short stat", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	session, err2 := strconv.Atoi(f[3])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("mcp: process %d: stat: %w", pid, err)
	}
	return procStat{pgrp: pgrp, session: session, start: start, zombie: f[0] == "Z"}, nil
}

// leftGroup reports whether the process group g recorded is still there
// and provably the one recorded: its leader runs with the recorded start
// time, or the leader is gone (or a zombie of that start time) and the
// group's processes are in the recorded session and all started after
// it. A group id is not given to a new group while a process of the old
// one lives, but once the old group ended its id may lead another: a
// process given the id that made a group (a shell's job, a daemon's
// first fork after setsid) and left it to its children, started after
// the recorded leader too; a zombie leader of another start time, or a
// session unlike the recorded one, tells that group apart.
func leftGroup(g procID) bool {
	if leader, err := readStat(g.PID); err == nil {
		if leader.start != g.Start {
			return false // the id is another process's now
		}
		if !leader.zombie {
			return leader.pgrp == g.PID
		}
	}
	if g.Session == nil {
		return false // recorded without its session: not provably ours
	}
	procs, _ := filepath.Glob(procDir + "/[0-9]*")
	found := false
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != g.PID || st.zombie {
			continue
		}
		if st.start < g.Start || st.session != *g.Session {
			return false // older than the recorded leader, or of another session: not its group
		}
		found = true
	}
	return found
}
