package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", errorLine(err))
		var ue *usageError
		if errors.As(err, &ue) {
			os.Exit(exitUsage)
		}
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(exitFailure)
	}
	os.Exit(exitOK)
}

// errorLine is err as printed after "gateway: ": without the program's
// name again, whether the message starts with it as a prefix ("gateway:
// ...", gatewayd's) or as its command's path ("gateway sessions show: ...",
// cobra's CommandPath).
func errorLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "gateway: ")
	return strings.TrimPrefix(msg, "gateway ")
}

// usageError marks a command-line mistake (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }
