//go:build !unix

package mcp

import (
	"os/exec"
	"time"
)

// ownGroup does nothing where process groups are not available.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing where process groups are not available.
func killGroup(int, time.Duration) {}
