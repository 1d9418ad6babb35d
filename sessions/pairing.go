package sessions

import (
	"fmt"

	"github.com/gateway/gateway/internal/pairstate"
)

// Names and values the pairing and cursor stores accept. Both backends
// refuse anything else with an error naming what is wrong, before it
// reaches a file name or a query: a channel or scope from a chat never
// becomes a path outside the state dir, and PostgreSQL's text type (which
// holds no NUL and only valid UTF-8) stores exactly what the files do.
const (
	// MaxCursorScope is the longest cursor scope, in bytes. Escaped for a
	// file name (at most three bytes per byte) it stays under the 255-byte
	// limit of common file systems.
	MaxCursorScope = 80
	// MaxCursorName is the longest cursor name, in bytes.
	MaxCursorName = 200
	// MaxCursorValue is the longest cursor value, in bytes.
	MaxCursorValue = 64 << 10
)

// CheckCursor returns an error unless scope (1 to MaxCursorScope bytes),
// name (1 to MaxCursorName bytes) and value (at most MaxCursorValue bytes)
// are valid UTF-8 without NUL.
func CheckCursor(scope, name, value string) error {
	if err := CheckCursorScope(scope); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("sessions: cursor %s: empty name", quoteClip(scope))
	}
	if err := checkText(name, MaxCursorName); err != nil {
		return fmt.Errorf("sessions: cursor %s name %s: %w", quoteClip(scope), quoteClip(name), err)
	}
	if err := checkText(value, MaxCursorValue); err != nil {
		return fmt.Errorf("sessions: cursor %s name %s value: %w", quoteClip(scope), quoteClip(name), err)
	}
	return nil
}

// CheckCursorScope is the scope part of CheckCursor.
func CheckCursorScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("sessions: cursor: empty scope")
	}
	if err := checkText(scope, MaxCursorScope); err != nil {
		return fmt.Errorf("sessions: cursor scope %s: %w", quoteClip(scope), err)
	}
	return nil
}

func checkText(s string, max int) error { return pairstate.CheckText(s, max) }

// quoteClip quotes s for an error message, cut to 64 bytes.
func quoteClip(s string) string { return pairstate.QuoteClip(s) }
