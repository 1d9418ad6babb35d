package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps the directories a and b in one step
// (renameat2 RENAME_EXCHANGE): a crash leaves both names in place, each
// with the whole of one of them.
func exchangeDirs(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("swap %s and %s in one step (renameat2 RENAME_EXCHANGE): %w; "+
			"restore into a new --state-dir (or after moving the old one away) instead", a, b, err)
	}
	return nil
}
