//go:build linux

package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
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
	dead := me
	dead.Start++ // its pid is someone else's now
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
	reused := lid
	reused.Start--
	dead := me
	dead.Start++
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

// startLeftGroup starts a shell that runs a background sleep and exits, in
// a process group of its own (a new session too when session), and waits
// for the shell unless zombie: the group left without its leader, as a
// launcher's or a daemon's first fork leaves it. It returns the leader's
// id, read while it ran, and the background pid.
func startLeftGroup(t *testing.T, session, zombie bool) (procID, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $!; read _`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !session, Setsid: session}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
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
	id, err := thisProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = in.Close() // the shell exits
	if zombie {
		deadline := time.Now().Add(10 * time.Second)
		for alive(cmd.Process.Pid) {
			if time.Now().After(deadline) {
				t.Fatal("the group's leader did not exit")
			}
			time.Sleep(10 * time.Millisecond)
		}
	} else {
		_ = cmd.Wait()
	}
	return id, bg
}

// A recorded group whose processes all ended may have its id taken by
// another process's group (pid reuse) that outlives its own leader: a
// daemon forked after setsid, a shell job whose first process exited, or
// one whose leader is still a zombie. Its processes started after the
// recorded leader, as the recorded group's would have: the reap stopped
// them, processes the gateway never started. A zombie leader of another
// start time, or a session not the recorded one, tells them apart.
func TestReapSparesAnotherGroupGivenTheRecordedID(t *testing.T) {
	me := self(t)
	dead := me
	dead.Start++
	for _, tc := range []struct {
		name            string
		session, zombie bool
	}{
		{"daemon's session, its first fork gone", true, false},
		{"our session, its leader a zombie", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			leader, bg := startLeftGroup(t, tc.session, tc.zombie)
			// What the dead daemon recorded: an earlier process of that pid,
			// in the daemon's session.
			recorded := procID{PID: leader.PID, Start: leader.Start - 1, Boot: leader.Boot, PIDNS: me.PIDNS, Session: me.Session}
			writeRecord(t, dir, "groups-999999.json", dead, recorded)
			m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
			if n := m.groups.reapLeft(); n != 0 {
				t.Errorf("reaped %d groups, want none", n)
			}
			if !alive(bg) {
				t.Fatal("a process of another group that was given the recorded id was stopped")
			}
		})
	}
}

// The group a dead daemon's server left once the server itself exited
// (npx's node after npx): its leader gone, its processes in the daemon's
// session, started after it. It is stopped.
func TestReapStopsAGroupWhoseLeaderLeft(t *testing.T) {
	dir := t.TempDir()
	me := self(t)
	leader, bg := startLeftGroup(t, false, false)
	dead := me
	dead.Start++
	writeRecord(t, dir, "groups-999999.json", dead, leader)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 1 {
		t.Errorf("reaped %d groups, want 1", n)
	}
	waitGone(t, "the process the dead daemon's server left", bg)
}

// A record written in another pid namespace (a container's daemon, the
// state dir shared with the host or another container on this boot)
// names processes by that namespace's pids: here they name other
// processes, or none. Its groups are never stopped; the record goes.
func TestReapIgnoresRecordsOfAnotherPIDNamespace(t *testing.T) {
	dir := t.TempDir()
	leader, bg := startGroup(t)
	lid, err := thisProcess(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	other := "pid:[1]"
	dead := procID{PID: me.PID, Start: me.Start + 1, Boot: me.Boot, PIDNS: other, Session: me.Session}
	lid.PIDNS = other
	path := writeRecord(t, dir, "groups-999999.json", dead, lid)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 0 {
		t.Errorf("reaped %d groups, want none", n)
	}
	if !alive(leader.Process.Pid) || !alive(bg) {
		t.Fatal("a group named by another pid namespace's record was stopped")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the other namespace's record: %v, want it removed", err)
	}
}

// A container restarted (the state dir on a volume) runs in a new pid
// namespace, often given the old one's id (the lowest free): its records
// look like this namespace's. Every process the old one recorded started
// before this namespace's first process; a group of that id here, whose
// leader left it, in the container's one session, is another: it is not
// stopped, whatever started after.
func TestReapSparesGroupsRecordedBeforeThisNamespaceBegan(t *testing.T) {
	pid1, err := readStat(1)
	if err != nil {
		t.Fatal(err)
	}
	if pid1.start == 0 {
		t.Fatal("pid 1 started at tick 0: no time before it to record")
	}
	dir := t.TempDir()
	me := self(t)
	leader, bg := startLeftGroup(t, false, false)
	dead := me
	dead.Start++
	old := leader
	old.Start = pid1.start - 1 // the old container's server
	writeRecord(t, dir, "groups-999999.json", dead, old)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 0 {
		t.Errorf("reaped %d groups, want none", n)
	}
	if !alive(bg) {
		t.Fatal("a group recorded before this pid namespace began was stopped")
	}
}

// A daemon that died may have had the pid this one has (pid reuse: its
// record has this daemon's file name). Its groups are stopped like any
// dead daemon's, not taken for this daemon's own and written over at its
// first server's start.
func TestReapStopsGroupsOfADeadDaemonThatHadOurPID(t *testing.T) {
	dir := t.TempDir()
	leader, bg := startGroup(t)
	lid, err := thisProcess(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	dead := self(t)
	dead.Start-- // this pid's earlier process
	path := writeRecord(t, dir, "groups-"+strconv.Itoa(dead.PID)+".json", dead, lid)
	m := New(Options{Logger: zaptest.NewLogger(t), GroupsDir: dir})
	if n := m.groups.reapLeft(); n != 1 {
		t.Errorf("reaped %d groups, want 1", n)
	}
	waitGone(t, "the process the dead daemon's server left", bg)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's record: %v, want it removed", err)
	}
}

// A CI runner's or a container's processes that never called setsid are
// in a session whose leader is outside their pid namespace: /proc shows
// its id as 0, a session as real as any other. A left group recorded in
// session 0 is the recorded one when its processes are in session 0 and
// started after its leader; a record without a session is not provably
// anything, and a process of another session tells the group apart.
func TestLeftGroupInSessionZero(t *testing.T) {
	dir := t.TempDir()
	stat := func(pid, pgrp, session int, start uint64) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, strconv.Itoa(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ppid pgrp session tty tpgid flags ... starttime (field 22)
		line := fmt.Sprintf("%d (npx node) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, pgrp, session, start)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid), "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := procDir
	procDir = dir
	t.Cleanup(func() { procDir = old })
	stat(4300, 4242, 0, 200) // the leader 4242 is gone; its group's process runs
	zero := 0
	if !leftGroup(procID{PID: 4242, Start: 100, Session: &zero}) {
		t.Error("a left group recorded in session 0, its process in session 0: not reaped")
	}
	if leftGroup(procID{PID: 4242, Start: 100}) {
		t.Error("a left group recorded without a session was taken for the recorded one")
	}
	stat(4301, 4242, 7, 300)
	if leftGroup(procID{PID: 4242, Start: 100, Session: &zero}) {
		t.Error("a group with a process of another session was taken for the recorded one")
	}
}
