//go:build unix

package mcp

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup makes cmd the leader of a new process group, so that what it
// starts (a launcher's real server, a shell's background job) can be
// found and stopped with it (killGroup).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup stops what is left of the process group led by pid once the
// server's session closed (the leader was already waited for): SIGTERM,
// then SIGKILL to whatever is still there after grace. pid 1 is never a
// server's group (init's): kill(-1) would signal every process the daemon
// may signal, so a record naming it (damaged, or not ours) stops nothing.
func killGroup(pid int, grace time.Duration) {
	if pid <= 1 || syscall.Kill(-pid, syscall.SIGTERM) != nil {
		return // ESRCH: nothing left
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if err := syscall.Kill(-pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
