//go:build !linux

package main

import "fmt"

// exchangeDirs is not available here: replacing a state dir in one step
// needs Linux's renameat2 RENAME_EXCHANGE.
func exchangeDirs(a, b string) error {
	return fmt.Errorf("swap %s and %s in one step: only supported on Linux; restore into a new --state-dir (or after moving the old one away) instead", a, b)
}
