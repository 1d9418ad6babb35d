package mcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// thisProcess reads pid's start time and the boot it belongs to from /proc.
func thisProcess(pid int) (procID, error) {
	st, err := readStat(pid)
	if err != nil {
		return procID{}, err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return procID{}, fmt.Errorf("mcp: boot id: %w", err)
	}
	return procID{PID: pid, Start: st.start, Boot: strings.TrimSpace(string(boot))}, nil
}

// procStat is what reaping needs of /proc/<pid>/stat.
type procStat struct {
	pgrp   int
	start  uint64
	zombie bool
}

// readStat parses /proc/<pid>/stat (the command, in parentheses, may hold
// spaces and parentheses: the fields start after the last ')').
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
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
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("mcp: process %d: stat: %w", pid, err)
	}
	return procStat{pgrp: pgrp, start: start, zombie: f[0] == "Z"}, nil
}

// leftGroup reports whether the process group g recorded is still there
// and provably the one recorded (see reapLeft).
func leftGroup(g procID) bool {
	if leader, err := readStat(g.PID); err == nil && !leader.zombie {
		return leader.start == g.Start && leader.pgrp == g.PID
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
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
		if st.start < g.Start {
			return false // older than the recorded leader: not its group
		}
		found = true
	}
	return found
}
