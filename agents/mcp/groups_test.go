//go:build linux

package mcp

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// startGroup starts a shell leading a process group of its own that runs
// a background sleep (what a server's launcher leaves behind) and then
// becomes a sleep itself; it returns the leader and the background pid.
func startGroup(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $!; exec sleep 300`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	bg, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, bg
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && !st.zombie
}

// writeRecord writes a registry file as a daemon owner left it.
func writeRecord(t *testing.T, dir, name string, owner procID, groups ...procID) string {
	t.Helper()
	b, err := json.Marshal(groupsFile{Owner: owner, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func self(t *testing.T) procID {
	t.Helper()
	id, err := thisProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A daemon killed with SIGKILL leaves its stdio servers' process groups
// running (what a server started does not exit with its stdin): the next
// daemon's manager stops them before it starts its own servers, leader
// and background processes alike, and drops the dead daemon's record.
func TestRunStopsGroupsLeftByADeadDaemon(t *testing.T) {
	dir := t.TempDir()
	leader, bg := startGroup(t)
	lid, err := thisProcess(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	dead := procID{PID: me.PID, Start: me.Start + 1, Boot: me.Boot} // its pid is someone else's now
	path := writeRecord(t, dir, "groups-999999.json", dead, lid)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 1 {
		t.Errorf("reaped %d groups, want 1", n)
	}
	exited := make(chan struct{})
	go func() { _ = leader.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the dead daemon's server still runs")
	}
	waitGone(t, "the process the dead daemon's server left", bg)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's record: %v, want it removed", err)
	}
}

// A record whose owner runs is a live daemon's (two daemons sharing a
// directory): its servers are left alone, and so is a recorded group
// whose id a process of another start time holds now (pid reuse).
func TestRunLeavesLiveDaemonsAndReusedIDs(t *testing.T) {
	dir := t.TempDir()
	leader, bg := startGroup(t)
	lid, err := thisProcess(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	live := writeRecord(t, dir, "groups-1.json", me, lid)
	reused := procID{PID: lid.PID, Start: lid.Start - 1, Boot: lid.Boot}
	dead := procID{PID: me.PID, Start: me.Start + 1, Boot: me.Boot}
	gone := writeRecord(t, dir, "groups-999999.json", dead, reused)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 0 {
		t.Errorf("reaped %d groups, want none", n)
	}
	if !alive(leader.Process.Pid) || !alive(bg) {
		t.Fatal("a live daemon's server, or a process whose pid was reused, was stopped")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live daemon's record: %v, want it kept", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's record: %v, want it removed", err)
	}
}
